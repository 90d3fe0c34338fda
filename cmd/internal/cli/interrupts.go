package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func (a *app) interruptsCommand() *cobra.Command {
	var raw, text string
	resolve := &cobra.Command{
		Use:   "resolve RUN_ID INTERRUPT_ID",
		Short: "Answer an open interrupt",
		Long: "resolve writes the answer into the interrupt's resume field and commits it; a worker then\n" +
			"drives the run on. The answer is --value (JSON, @FILE or -) or --string (a plain string).\n" +
			"An answer the interrupt's schema rejects is invalid input (exit 2); an interrupt already\n" +
			"resolved or a finished run is a conflict (exit 4).",
		Args: exactArgs(2, "a run id", "an interrupt id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v any
			switch {
			case raw != "" && cmd.Flags().Changed("string"):
				return usagef("give --value or --string, not both")
			case cmd.Flags().Changed("string"):
				v = text
			case raw != "":
				var err error
				if v, err = a.readValue("--value", raw); err != nil {
					if given := strings.TrimSpace(raw); given != "" && given != "-" && !strings.ContainsRune(`@{["`, rune(given[0])) {
						// approved for "approved": the answer was meant as a string.
						return fmt.Errorf("%w; a plain string is given with --string %s", err, shellQuote(raw))
					}
					return err
				}
			default:
				return usagef("expected the answer as --value JSON or --string TEXT")
			}
			return a.interruptsResolve(cmd.Context(), args[0], args[1], v)
		},
	}
	resolve.Flags().StringVar(&raw, "value", "", "the answer as JSON, @FILE or -")
	resolve.Flags().StringVar(&text, "string", "", "the answer as a plain string")

	var limit int
	list := &cobra.Command{
		Use:   "list [RUN_ID]",
		Short: "List open interrupts of a run, or of every running and waiting run",
		Args:  rangeArgs(0, 1, "at most one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > ports.MaxPageLimit {
				return usagef("--limit %d: want 1 to %d", limit, ports.MaxPageLimit)
			}
			return a.interruptsList(cmd.Context(), args, limit)
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "runs with open interrupts to list, newest first (without RUN_ID)")
	return groupCommand("interrupts", "List and resolve interrupts", list, resolve)
}

func (a *app) interruptsResolve(ctx context.Context, runID, interruptID string, v any) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c, err := a.answeringClient(ctx, rt, runID)
	if err != nil {
		return err
	}
	r, err := c.ResolveInterrupt(ctx, runID, interruptID, v)
	if err != nil {
		return fmt.Errorf("run %q interrupt %q: %w", runID, interruptID, err)
	}
	if a.json {
		return printJSON(a.io.Out, toRunJSON(r, nil))
	}
	fmt.Fprintf(a.io.Out, "run %s: interrupt %s resolved with %s; the run is %s\n", r.ID, interruptID, compactJSON(v), r.Status)
	return nil
}

// answeringClient is the configured scope's client of an engine that
// knows, beside the example nodes, every node implementation the run's
// graph names. An answer runs no node (it is judged by the interrupt's
// schema and the resume field), so the CLI answers the interrupts of runs
// whose nodes only the application's own worker registers. When the run or
// its graph cannot be read, the CLI's own client reports why.
func (a *app) answeringClient(ctx context.Context, rt *wiring.Runtime, runID string) (*engine.Client, error) {
	c := a.client(rt)
	r, err := c.FetchRun(ctx, runID)
	if err != nil {
		return c, nil
	}
	return a.knowingClient(ctx, rt, engine.GraphRef{GraphID: r.GraphID, Hash: r.GraphHash})
}

// knowingClient is the configured scope's client of an engine that knows,
// beside the example nodes, every node implementation the graph version
// ref names, each as a stand-in that never runs. Starting a run or
// answering an interrupt runs no node, so the CLI does both for graphs
// whose nodes only the application's own worker registers. When the graph
// cannot be read, the CLI's own client reports why.
func (a *app) knowingClient(ctx context.Context, rt *wiring.Runtime, ref engine.GraphRef) (*engine.Client, error) {
	c := a.client(rt)
	g, err := c.FetchGraph(ctx, ref)
	if err != nil {
		return c, nil
	}
	nodes := demo.Registry()
	for _, n := range g.Nodes {
		if _, ok := nodes.Lookup(n.Implementation.Ref); !ok {
			// A ref no registry takes is left for the compile to report.
			_ = nodes.Register(n.Implementation.Ref, node.New(nil, notRunHere))
		}
	}
	s, err := a.settings(engine.Config{})
	if err != nil {
		return nil, err
	}
	cfg := s.Engine
	cfg.Backend, cfg.Nodes, cfg.Logger = rt.Backend, nodes, s.Logger
	e, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	if a.tenant != "" {
		return e.Tenant(a.tenant), nil
	}
	return e.Client, nil
}

// notRunHere stands in for a node the CLI does not know; its engine never
// runs a node.
func notRunHere(context.Context, node.Input) (node.Output, error) {
	return node.Output{}, errors.New("docket: this node runs only on a worker that registers it")
}

func (a *app) interruptsList(ctx context.Context, args []string, limit int) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	var runs []*run.Run
	leftOut := false // more runs with open interrupts than --limit let the list look at
	if len(args) == 1 {
		r, err := c.FetchRun(ctx, args[0])
		if err != nil {
			return about("run", args[0], err)
		}
		runs = append(runs, r)
	} else {
		// An interrupt is open in a waiting run, and also in a running one
		// whose other branches are still at work: the store selects the
		// runs of either status whose documents hold one, however many
		// newer runs hold none.
		page, err := c.ListRuns(ctx, ports.ListRunsParams{
			Limit:          limit,
			Statuses:       []run.Status{run.StatusRunning, run.StatusWaiting},
			OpenInterrupts: true,
		})
		if err != nil {
			return err
		}
		leftOut = page.HasMore
		for _, s := range page.Runs {
			r, err := c.FetchRun(ctx, s.RunID)
			if errors.Is(err, ports.ErrNotFound) {
				continue // finished and pruned since the listing
			}
			if err != nil {
				return about("run", s.RunID, err)
			}
			runs = append(runs, r)
		}
	}
	open := []interruptJSON{}
	for _, r := range runs {
		for _, in := range interruptsOf(r, true) {
			if in.Status == run.InterruptOpen {
				open = append(open, in)
			}
		}
	}
	if leftOut {
		defer a.say("more runs have open interrupts than the %d looked at: raise --limit (at most %d)", limit, ports.MaxPageLimit)
	}
	if a.json {
		return printJSON(a.io.Out, open)
	}
	if len(open) == 0 {
		if len(args) == 1 {
			a.say("no open interrupts in run %s", shellQuote(args[0]))
		} else {
			a.say("no open interrupts")
		}
		return nil
	}
	t := newTable(a.io.Out, "RUN", "INTERRUPT", "NODE", "ANSWER", "RESUMES", "CREATED", "METADATA")
	for _, in := range open {
		t.row(in.RunID, in.ID, in.NodeID, answerKind(in.Schema), in.ResumeChannel, shortTimeOf(in.CreatedAt), orDash(compactMeta(in.Metadata)))
	}
	return t.flush()
}

// answerKind says what answer an interrupt of schema s (its wire form)
// takes, for whoever answers it: its type, an enum's values, or any.
func answerKind(s map[string]any) string {
	typ, _ := s["type"].(string)
	values, _ := s["values"].([]any)
	switch {
	case typ == "":
		return "any"
	case typ == "enum" && len(values) > 0:
		each := make([]string, len(values))
		for i, v := range values {
			each[i] = compactJSON(v)
		}
		return "one of " + strings.Join(each, ", ")
	}
	return typ
}
