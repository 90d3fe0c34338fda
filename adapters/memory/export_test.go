package memory

// OnAnnounce makes every announcement of s call hook synchronously, in
// the announcing writer's goroutine, before the write returns. Set it
// before the store is shared.
func (s *Store) OnAnnounce(hook func()) { s.notifier.announced = hook }
