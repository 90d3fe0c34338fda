// Package demo is a small, runnable Docket workflow: a loan-style review
// that fans out to two checks (one of them flaky, so it retries), joins
// them, routes on a guarded branch, asks a person for approval through an
// interrupt and summarizes. It runs inline, without a database, and prints
// the result and a checkpoint timeline. It exists to show the API, not to
// be imported by production code.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// ApprovalInterruptID is the interrupt the approval node opens.
const ApprovalInterruptID = "approval"

// Input is the demo's run input.
var Input = map[string]any{"customer": "Ada", "amount": 1500.0}

// Graph returns the demo workflow:
//
//	$start → intake → {credit_check (flaky, retried), fraud_check}
//	[credit_check, fraud_check] → decide
//	decide → manager_approval   when route == "manual" (interrupts for a decision)
//	decide → auto_approve       otherwise
//	manager_approval | auto_approve → summarize → $finish
func Graph() (*graph.Graph, error) {
	manual := graph.Equals(graph.Path("route"), "manual")
	return graph.New("loan-review").
		Name("Loan review").
		Input("customer", schema.String(), graph.Required()).
		Input("amount", schema.Float(), graph.Required()).
		State("checks", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("score", schema.Integer()).
		State("route", schema.Enum("auto", "manual")).
		State("approval", schema.Enum("approved", "rejected")).
		State("decided_by", schema.String()).
		State("summary", schema.String()).
		Node("intake", "demo.intake").
		Node("credit_check", "demo.credit_check", graph.Retry(3, 20)).
		Node("fraud_check", "demo.fraud_check").
		Node("decide", "demo.decide").
		Node("manager_approval", "demo.manager_approval").
		Node("auto_approve", "demo.auto_approve").
		Node("summarize", "demo.summarize").
		Edge("start", graph.Start, "intake").
		Edge("to_credit", "intake", "credit_check").
		Edge("to_fraud", "intake", "fraud_check").
		Join("checks_done", []string{"credit_check", "fraud_check"}, "decide").
		Edge("needs_manager", "decide", "manager_approval", graph.When(manual)).
		Edge("auto", "decide", "auto_approve", graph.When(graph.Not(manual))).
		Edge("manager_done", "manager_approval", "summarize").
		Edge("auto_done", "auto_approve", "summarize").
		Edge("finish", "summarize", graph.Finish).
		Output("summary", "").
		Output("approval", "").
		Output("checks", "").
		MaxSupersteps(20).
		Build()
}

type decideConfig struct {
	ManualAbove float64 `json:"manual_above"`
}

// Registry returns the demo's node implementations.
func Registry() *node.Registry {
	return node.NewRegistry().
		MustRegister("demo.intake", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
			return map[string]any{"checks": "intake"}, nil
		})).
		// The credit bureau is unavailable on the first attempt: the node
		// returns an error, the retry policy parks the superstep and the
		// second attempt succeeds. Its sibling's result waits meanwhile.
		MustRegister("demo.credit_check", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			if in.Task.Attempt == 1 {
				return node.Output{}, errors.New("credit bureau unavailable")
			}
			return node.Update(map[string]any{"checks": "credit", "score": 720}), nil
		})).
		MustRegister("demo.fraud_check", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"checks": "fraud"}, nil
		})).
		// decide's config schema carries a default the compiler fills in.
		MustRegister("demo.decide", node.Typed(
			schema.Object(map[string]*schema.Schema{"manual_above": schema.Float().WithDefault(1000.0)}),
			func(_ context.Context, state map[string]any, cfg decideConfig) (map[string]any, error) {
				amount, _ := state["amount"].(float64)
				if amount > cfg.ManualAbove {
					return map[string]any{"route": "manual"}, nil
				}
				return map[string]any{"route": "auto"}, nil
			})).
		// manager_approval asks a person until the approval field is set.
		MustRegister("demo.manager_approval", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			if _, decided := in.State["approval"]; !decided {
				return node.Interrupt(node.InterruptRequest{
					ID:            ApprovalInterruptID,
					ResumeChannel: "approval",
					Schema:        schema.Enum("approved", "rejected").AsRequired(),
					Metadata:      map[string]any{"question": fmt.Sprintf("Approve %v for %v?", in.State["amount"], in.State["customer"])},
				}), nil
			}
			return node.Update(map[string]any{"decided_by": "manager"}), nil
		})).
		MustRegister("demo.auto_approve", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"approval": "approved", "decided_by": "policy"}, nil
		})).
		MustRegister("demo.summarize", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
			checks := fmt.Sprint(state["checks"])
			return map[string]any{"summary": fmt.Sprintf("%v: %v %v by %v after checks %s",
				state["customer"], state["amount"], state["approval"], state["decided_by"], checks)}, nil
		}))
}

// Result is a finished demo run with every checkpoint of both calls.
type Result struct {
	Run         *run.Run
	Checkpoints []run.Checkpoint
}

// Execute runs the demo inline: it drives the run until it waits for
// approval, resolves the interrupt with "approved", and drives it to the
// end. opts are passed to both inline calls (tests inject a clock or a
// sleeper).
func Execute(ctx context.Context, opts ...inline.Option) (*Result, error) {
	g, err := Graph()
	if err != nil {
		return nil, err
	}
	opts = append([]inline.Option{inline.WithRegistry(Registry())}, opts...)
	r, cps, err := inline.RunInline(ctx, g, Input, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: run: %w", err)
	}
	if r.Status != run.StatusWaiting {
		return nil, fmt.Errorf("demo: expected the run to wait for approval, it is %s", r.Status)
	}
	r, more, err := inline.ResolveInterruptInline(ctx, r, ApprovalInterruptID, "approved", g, opts...)
	cps = append(cps, more...)
	if err != nil {
		return nil, fmt.Errorf("demo: resolve approval: %w", err)
	}
	return &Result{Run: r, Checkpoints: cps}, nil
}

// Run executes the demo and writes its outcome and checkpoint timeline to w.
func Run(ctx context.Context, w io.Writer) error {
	res, err := Execute(ctx)
	if err != nil {
		return err
	}
	return Print(w, res)
}

// Print writes the run's status, output and checkpoint timeline.
func Print(w io.Writer, res *Result) error {
	r := res.Run
	fmt.Fprintf(w, "run %s of %s: %s after %d supersteps\n\n", r.ID, r.GraphID, r.Status, r.Step)
	fmt.Fprintln(w, "output:")
	for _, k := range sortedKeys(r.Output) {
		fmt.Fprintf(w, "  %-9s %v\n", k+":", r.Output[k])
	}
	fmt.Fprintln(w, "\ncheckpoints:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SEQ\tTYPE\tSTEP\tDISPOSITION\tEVENTS")
	for _, cp := range res.Checkpoints {
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\n", cp.Seq, cp.Type, cp.Run.Step, disposition(cp.Metadata), describeEvents(cp.Events))
	}
	return tw.Flush()
}

func disposition(metadata map[string]any) string {
	kind, _ := metadata["wake_disposition"].(string)
	if reason, ok := metadata["park_reason"].(string); ok && reason != "" {
		return kind + " (" + reason + ")"
	}
	return kind
}

// describeEvents lists the runtime events of a checkpoint (the final
// checkpoint_committed fact is implied) with the node or edge they concern.
func describeEvents(events []run.Event) string {
	var parts []string
	for _, e := range events {
		if e.Type == run.EventCheckpointCommitted {
			continue
		}
		part := string(e.Type)
		switch {
		case e.Type == run.EventNodeFailed:
			part += fmt.Sprintf(" %s#%v: %v", e.NodeID, e.Payload["attempt"], e.Payload["reason"])
		case e.NodeID != "":
			part += " " + e.NodeID
		case e.Type == run.EventEdgeTriggered:
			part += fmt.Sprintf(" %v", e.Payload["edge_id"])
		case e.ChannelID != "":
			part += " " + e.ChannelID
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
