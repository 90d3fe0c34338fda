// Package memory is the in-process adapter of every Docket port.
package memory
