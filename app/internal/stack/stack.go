// Package stack gives a goroutine its working stack before it needs it.
//
// A goroutine starts with a small stack that doubles each time a call
// overflows it, and every doubling copies every frame on the stack (and
// adjusts every pointer into it). A goroutine that runs a deep path once,
// such as a superstep's settle or a store commit, pays those copies at the
// path's full depth. One frame the size of the stack it will need, taken
// while nothing else is on the stack, makes the runtime grow it to fit at
// once, for the price of one copy of a near-empty stack.
package stack

// Pad is the stack room Grow claims: enough for the deepest path of a
// superstep (plan, settle, barrier, propose) and of a store commit, so a
// goroutine running them grows its stack once, to 16 KiB (CPU profiles of
// a drain and of the inline chain show no further growth).
const Pad = 12 << 10

// never is false; the compiler cannot know it, so Grow keeps its frame.
var never bool

// Grow gives the calling goroutine a stack of Pad bytes and more. Call it
// first thing in a goroutine that will run a superstep.
//
// The stack check at entry covers the whole frame, so the runtime grows
// the stack to fit it; the pad itself is declared where it never runs, so
// its Pad bytes are not zeroed each time (a goroutine per lease).
//
//go:noinline
func Grow() {
	if never {
		var pad [Pad]byte
		touch(pad[:])
	}
}

// touch keeps Grow's frame from being optimized away.
//
//go:noinline
func touch([]byte) {}
