// Package app is Docket's application layer: it runs user code against the
// pure domain. Its packages are
//
//   - node: the API user code implements (Node, Input, Output, Registry);
//   - executor: runs a superstep's node attempts concurrently under
//     deadlines, turning errors, panics, exits and timeouts into results;
//   - inline: drives runs in-process without a store (tests, tools);
//   - demo: a small runnable example workflow;
//   - engine: the durable facade (graphs, runs, signals, Start/Stop);
//   - dispatch: one engine's claim loop;
//   - vehicle: drives one claimed run to its next park;
//   - graphcache: the node-local cache of compiled graph versions;
//   - observe: best-effort checkpoint observers after commit;
//   - prune: the retention loop.
//
// The application layer never imports an adapter: storage arrives through
// the ports module.
package app
