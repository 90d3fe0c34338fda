package claim

import "sync"

// Phase serializes one backend instance's admission calls and owns the
// demand-1 preference. It starts at PreferReady and is not durable.
// The zero value is ready to use.
type Phase struct {
	mu      sync.Mutex
	flipped bool // false: ready, true: expired
}

// Preference reports the preference the next call will receive.
func (p *Phase) Preference() Preference {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current()
}

func (p *Phase) current() Preference {
	if p.flipped {
		return PreferExpired
	}
	return PreferReady
}

// Admit runs fn while holding the phase, so one instance admits one call
// at a time, handing it the current preference. After fn returns, the
// preference flips ready↔expired only when demand was exactly 1 and fn
// returned no error (an empty or poison-only batch still counts). A panic
// in fn releases the phase without flipping and propagates.
func Admit[T any](p *Phase, demand int, fn func(Preference) (T, error)) (T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := fn(p.current())
	if err == nil && demand == 1 {
		p.flipped = !p.flipped
	}
	return out, err
}
