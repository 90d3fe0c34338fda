// Package app is Docket's application layer.
package app
