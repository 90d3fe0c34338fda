package main

import (
	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
)

// newRootCommand builds the docket command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "docket",
		Short: "Durable graph workflows on PostgreSQL",
		Long: "Docket runs graph workflows in supersteps with durable checkpoints,\n" +
			"retries with backoff and interrupts for outside input.",
		SilenceUsage:  true,
		SilenceErrors: true, // main prints the error once
	}
	root.AddCommand(newDemoCommand())
	return root
}

func newDemoCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the example workflow inline and print its checkpoint timeline",
		Long: "demo runs a small loan-review workflow in this process, without a database:\n" +
			"a fan-out to two checks (one fails once and is retried), a join, a guarded\n" +
			"branch, an approval interrupt that the demo resolves, and a summary.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
}
