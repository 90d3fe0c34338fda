package main

import (
	"context"
	"strings"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// GraphID is the id of this worker's graph.
const GraphID = "ticket-triage"

// Graph is a support-ticket triage: classify the ticket, route it on a
// guarded branch to the billing or the technical desk, and draft a reply.
//
//	$start → classify → billing_desk   when category == "billing"
//	                  → tech_desk      otherwise
//	billing_desk | tech_desk → draft_reply → $finish
func Graph() (*graph.Graph, error) {
	billing := graph.Equals(graph.Path("category"), "billing")
	return graph.New(GraphID).
		Name("Ticket triage").
		Input("subject", schema.String(), graph.Required()).
		Input("body", schema.String(), graph.Required()).
		State("category", schema.Enum("billing", "technical")).
		State("notes", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("reply", schema.String()).
		Node("classify", "triage.classify").
		Node("billing_desk", "triage.billing_desk").
		Node("tech_desk", "triage.tech_desk").
		Node("draft_reply", "triage.draft_reply").
		Edge("start", graph.Start, "classify").
		Edge("to_billing", "classify", "billing_desk", graph.When(billing)).
		Edge("to_tech", "classify", "tech_desk", graph.When(graph.Not(billing))).
		Edge("billing_done", "billing_desk", "draft_reply").
		Edge("tech_done", "tech_desk", "draft_reply").
		Edge("finish", "draft_reply", graph.Finish).
		Output("category", "").
		Output("reply", "").
		Output("notes", "").
		MaxSupersteps(10).
		Build()
}

// Registry holds this worker's own node implementations. A custom worker
// registers exactly the nodes its graphs reference; a run of a graph whose
// nodes it lacks is handed back to workers that have them (and poisoned
// after MaxClaimAbandons such hand-backs in a row), so every worker of a
// schema should know every node its graphs use.
func Registry() *node.Registry {
	return node.NewRegistry().
		MustRegister("triage.classify", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
			text := strings.ToLower(state["subject"].(string) + " " + state["body"].(string))
			category := "technical"
			for _, word := range []string{"invoice", "refund", "charge", "billing", "payment"} {
				if strings.Contains(text, word) {
					category = "billing"
				}
			}
			return map[string]any{"category": category, "notes": "classified as " + category}, nil
		})).
		MustRegister("triage.billing_desk", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"notes": "billing desk checked the account"}, nil
		})).
		MustRegister("triage.tech_desk", node.Func(func(_ context.Context, _ map[string]any) (map[string]any, error) {
			return map[string]any{"notes": "tech desk reproduced the problem"}, nil
		})).
		MustRegister("triage.draft_reply", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
			return map[string]any{"reply": "Re: " + state["subject"].(string) + " — our " + state["category"].(string) + " team is on it."}, nil
		}))
}
