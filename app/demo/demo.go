// Package demo is Docket's example workflow and its node implementations:
// a loan review that fans out to two checks (one of them flaky, so it
// retries), joins them, routes on a guarded branch, asks a person for
// approval through an interrupt and summarizes.
//
// The same graph and nodes serve three callers: the `docket demo` command
// (a batch of durable runs, see Batch), the `docket worker` command (the
// built-in example nodes) and the inline example (Execute), which needs no
// store at all. It exists to show the API, not to be imported by
// production code.
package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// GraphID is the id of the demo graph.
const GraphID = "loan-review"

// ApprovalInterruptID is the interrupt the approval node opens.
const ApprovalInterruptID = "approval"

// ManualReviewAbove is the amount above which a person must approve.
const ManualReviewAbove = 1000.0

// Input is the inline demo's run input.
var Input = map[string]any{"customer": "Ada", "amount": 1500.0}

// Graph returns the demo workflow:
//
//	$start → intake → {credit_check (flaky, retried), fraud_check}
//	[credit_check, fraud_check] → decide              (fan-in: waits for both)
//	decide → manager_approval   when route == "manual" (interrupts for a decision)
//	decide → auto_approve       otherwise
//	manager_approval | auto_approve → summarize → $finish
func Graph() (*graph.Graph, error) {
	manual := graph.Equals(graph.Path("route"), "manual")
	return graph.New(GraphID).
		Name("Loan review").
		Description("Fan-out to two checks, a join, a guarded branch, an approval interrupt and a summary.").
		Input("customer", schema.String(), graph.Required()).
		Input("amount", schema.Float(), graph.Required()).
		State("checks", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("score", schema.Integer()).
		State("route", schema.Enum("auto", "manual")).
		State("approval", schema.Enum("approved", "rejected")).
		State("decided_by", schema.String()).
		State("summary", schema.String()).
		Node("intake", "demo.intake").
		Node("credit_check", "demo.credit_check", graph.Retry(3, 20), graph.Label("credit check (flaky)")).
		Node("fraud_check", "demo.fraud_check").
		Node("decide", "demo.decide").
		Node("manager_approval", "demo.manager_approval", graph.Label("manager approval (interrupt)")).
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

// Flaky reports whether the credit bureau fails the first attempt for an
// application of this amount: it does for every amount whose hundreds are
// odd, so a batch shows runs that retry next to runs that do not.
func Flaky(amount float64) bool { return int64(amount/100)%2 == 1 }

// Registry returns the demo's node implementations (the built-in example
// nodes of `docket worker`).
func Registry() *node.Registry {
	return node.NewRegistry().
		MustRegister("demo.intake", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"checks": "intake"}, nil
		})).
		// The credit bureau is unavailable on the first attempt of some
		// applications: the node returns an error, the retry policy parks
		// the superstep and the second attempt succeeds. Its sibling's
		// result waits in the checkpoint meanwhile.
		MustRegister("demo.credit_check", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			if in.Task.Attempt == 1 && Flaky(number(in.State["amount"])) {
				return node.Output{}, errors.New("credit bureau unavailable")
			}
			return node.Update(map[string]any{"checks": "credit", "score": 720}), nil
		})).
		MustRegister("demo.fraud_check", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"checks": "fraud"}, nil
		})).
		// decide's config schema carries a default the compiler fills in.
		MustRegister("demo.decide", node.Typed(
			schema.Object(map[string]*schema.Schema{"manual_above": schema.Float().WithDefault(ManualReviewAbove)}),
			func(_ context.Context, state map[string]any, cfg decideConfig) (map[string]any, error) {
				if number(state["amount"]) > cfg.ManualAbove {
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
			return map[string]any{"summary": fmt.Sprintf("%v: %v %v by %v after checks %v",
				state["customer"], state["amount"], state["approval"], state["decided_by"], state["checks"])}, nil
		}))
}

// number reads a float field, which also accepts integers.
func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int64:
		return float64(n)
	}
	return 0
}

// ManagerDecision is how the demo's "manager" answers an approval
// interrupt: amounts up to 10 000 are approved, larger ones rejected.
func ManagerDecision(amount float64) string {
	if amount > 10000 {
		return "rejected"
	}
	return "approved"
}
