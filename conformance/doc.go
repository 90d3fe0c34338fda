// Package conformance is the black-box suite every Docket storage adapter must pass.
package conformance
