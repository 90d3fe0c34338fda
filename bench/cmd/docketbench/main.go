// Command docketbench runs Docket's benchmark scenarios beside their peers
// (Eino for the inline shapes; the database's own limit, River and DBOS for
// the durable ones), prints a Markdown table and writes a JSON report.
//
//	docketbench --profile smoke|local|scale [--json bench-results.json] [--inline-only] [--only SUBSTRING]
//
// --only runs just the scenarios whose name contains SUBSTRING (for
// example --only db/claim-backlog).
//
// Database scenarios use DOCKET_BENCH_DATABASE_URL (a server URL whose role
// may CREATE DATABASE); each scenario gets its own fresh database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/docketgo/docket/bench/harness"
	"github.com/docketgo/docket/bench/suite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "docketbench:", err)
		os.Exit(1)
	}
}

func run() error {
	profileName := flag.String("profile", "smoke", "smoke, local or scale")
	jsonPath := flag.String("json", "bench-results.json", "where to write the JSON report ('' for none)")
	inlineOnly := flag.Bool("inline-only", false, "run only the inline (no database) scenarios")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	only := flag.String("only", "", "run only the scenarios whose name contains this substring")
	flag.Parse()

	p, ok := suite.Profiles[*profileName]
	if !ok {
		names := make([]string, 0, len(suite.Profiles))
		for n := range suite.Profiles {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("unknown profile %q (want one of %s)", *profileName, strings.Join(names, ", "))
	}
	p.Only = *only
	logf := func(format string, args ...any) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	rep := &harness.Report{Profile: p.Name, StartedAt: time.Now().UTC(), Machine: harness.DescribeMachine()}
	var errs []error
	if err := suite.RunInline(ctx, p, rep, logf); err != nil {
		errs = append(errs, fmt.Errorf("inline: %w", err))
	}
	if !*inlineOnly {
		if err := suite.RunDB(ctx, p, rep, logf); err != nil {
			errs = append(errs, fmt.Errorf("database: %w", err))
		}
	}
	rep.Duration = time.Since(rep.StartedAt).Round(time.Second).String()

	if err := rep.WriteMarkdown(os.Stdout); err != nil {
		return err
	}
	if *jsonPath != "" {
		f, err := os.Create(*jsonPath)
		if err != nil {
			return err
		}
		if err := rep.WriteJSON(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		logf("wrote %s", *jsonPath)
	}
	return errors.Join(errs...)
}
