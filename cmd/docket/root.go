package main

import (
	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
)

// newRootCommand builds the docket command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "docket",
		Short:         "Durable graph workflows on PostgreSQL",
		SilenceUsage:  true,
		SilenceErrors: true, // main prints the error once
	}
	root.AddCommand(&cobra.Command{
		Use:   "demo",
		Short: "Run the example workflow inline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := demo.Execute(cmd.Context())
			if err != nil {
				return err
			}
			cmd.Printf("run %s: %s after %d supersteps\n", res.Run.ID, res.Run.Status, res.Run.Step)
			return nil
		},
	})
	return root
}
