// Package notify holds Docket's wake notifiers, the listening side of the
// ports.Notifier contract:
//
//   - Listener: PostgreSQL LISTEN on channel docket_wake over its own
//     dedicated session connection (never a pooled one), accepting only
//     announcements whose payload is its Docket schema, checking that an
//     idle session still answers, and reconnecting with exponential
//     backoff when the session is lost or stops answering.
//   - Broadcaster: an in-process notifier for stores and runners that live
//     in the same process as their dispatcher.
//   - None: poll-only mode (for example behind PgBouncer in transaction
//     pooling mode, where LISTEN is unavailable).
//
// Announcements are hints that shorten a dispatcher's wait; polling stays
// the correctness path, so a lost notification, or a listener that is
// reconnecting, only adds latency. Nothing here writes to the database or
// reads a run; a Wake carries no identity.
//
// What it is not for: the announcing side. Stores announce from inside
// their own writes (pg_notify in the same transaction), so a listener can
// only hear about committed work.
package notify
