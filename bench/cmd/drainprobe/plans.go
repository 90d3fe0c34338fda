package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// planCount is one statement's plan choices summed over the pool's
// sessions.
type planCount struct {
	statement       string
	generic, custom int64
}

// printPlanCounts prints, for every statement prepared on the pool's idle
// sessions, how many times PostgreSQL planned it generically and custom:
// a statement planned custom at every execution pays its planning each
// time.
func printPlanCounts(ctx context.Context, pool *pgxpool.Pool) error {
	counts := map[string]*planCount{}
	for _, conn := range pool.AcquireAllIdle(ctx) {
		rows, err := conn.Query(ctx, "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
		if err != nil {
			conn.Release()
			return err
		}
		for rows.Next() {
			var c planCount
			if err := rows.Scan(&c.statement, &c.generic, &c.custom); err != nil {
				rows.Close()
				conn.Release()
				return err
			}
			sum := counts[c.statement]
			if sum == nil {
				sum = &planCount{statement: c.statement}
				counts[c.statement] = sum
			}
			sum.generic += c.generic
			sum.custom += c.custom
		}
		rows.Close()
		conn.Release()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	list := make([]*planCount, 0, len(counts))
	for _, c := range counts {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].generic+list[i].custom > list[j].generic+list[j].custom })
	fmt.Println("plans (generic / custom) of the pool's prepared statements:")
	for _, c := range list {
		fmt.Printf("  %6d / %6d  %s\n", c.generic, c.custom, oneLine(c.statement, 100))
	}
	return nil
}

// oneLine squeezes s's whitespace and cuts it to n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
