package postgres

// ScrubForTest exposes the adapter's error boundary to the tests.
var ScrubForTest = dbError
