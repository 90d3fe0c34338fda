package graph

import (
	"fmt"
	"strings"

	"github.com/docketgo/docket/domain/value"
)

// Policy keys the compiler and the runtime interpret.
const (
	PolicyMaxSupersteps = "max_supersteps" // graph policy
	PolicyTimeoutMS     = "timeout_ms"     // node policy
	PolicyRetry         = "retry"          // node policy
	PolicyOnError       = "on_error"       // node policy, reserved
	RetryMaxAttempts    = "max_attempts"   // inside retry
	RetryBackoffMS      = "backoff_ms"     // inside retry
)

// NodePolicy is a node's resolved execution policy.
type NodePolicy struct {
	TimeoutMS   int // 0: none set (the host maximum applies)
	MaxAttempts int // >= 1
	BackoffMS   int // >= 0
}

// PolicyError reports invalid node policies, one reason per bad key.
type PolicyError struct {
	Reasons []string
}

func (e *PolicyError) Error() string {
	return "invalid node policy: " + strings.Join(e.Reasons, "; ")
}

// policyProblem is every reason one policy key is invalid. The compiler
// reports one diagnostic per problem and the runtime one reason per problem,
// so both sides share these rules by construction.
type policyProblem struct {
	Key     string
	Reasons []string
}

func (p policyProblem) message() string { return strings.Join(p.Reasons, "; ") }

// ResolvePolicies reads timeout_ms and retry{max_attempts,backoff_ms} and
// rejects on_error and bad values with a *PolicyError. Other keys are open
// content and ignored; an explicit null counts as absent.
func ResolvePolicies(policies map[string]any) (NodePolicy, error) {
	resolved, problems := resolveNodePolicies(policies)
	if len(problems) > 0 {
		reasons := make([]string, len(problems))
		for i, p := range problems {
			reasons[i] = p.message()
		}
		return NodePolicy{}, &PolicyError{Reasons: reasons}
	}
	return resolved, nil
}

// resolveNodePolicies returns the resolved policy and the problems, ordered
// on_error, timeout_ms, retry.
func resolveNodePolicies(raw map[string]any) (NodePolicy, []policyProblem) {
	resolved := NodePolicy{MaxAttempts: 1}
	normalized, err := value.Normalize(raw)
	if err != nil {
		// Only reachable with a hand-made runtime graph: compiled graphs are
		// canonicalized before policies are read.
		return resolved, []policyProblem{{Key: "", Reasons: []string{"node policies are not portable: " + err.Error()}}}
	}
	policies, _ := normalized.(map[string]any)

	var problems []policyProblem
	if _, ok := policies[PolicyOnError]; ok {
		problems = append(problems, policyProblem{Key: PolicyOnError, Reasons: []string{
			`node policy "on_error" is reserved and not supported; write the failure into state and guard on it`,
		}})
	}
	switch v := policies[PolicyTimeoutMS].(type) {
	case nil:
	case int64:
		if v > 0 {
			resolved.TimeoutMS = int(v)
			break
		}
		problems = append(problems, policyProblem{Key: PolicyTimeoutMS, Reasons: []string{
			fmt.Sprintf(`node policy "timeout_ms" must be a positive integer, got %d`, v),
		}})
	default:
		problems = append(problems, policyProblem{Key: PolicyTimeoutMS, Reasons: []string{
			fmt.Sprintf(`node policy "timeout_ms" must be a positive integer, got %s`, describeValue(v)),
		}})
	}
	switch retry := policies[PolicyRetry].(type) {
	case nil:
	case map[string]any:
		maxAttempts, backoff, reasons := resolveRetry(retry)
		if len(reasons) > 0 {
			problems = append(problems, policyProblem{Key: PolicyRetry, Reasons: reasons})
			break
		}
		resolved.MaxAttempts, resolved.BackoffMS = maxAttempts, backoff
	default:
		problems = append(problems, policyProblem{Key: PolicyRetry, Reasons: []string{
			fmt.Sprintf(`node policy "retry" must be a map with "max_attempts" and "backoff_ms", got %s`, describeValue(retry)),
		}})
	}
	if len(problems) > 0 {
		return NodePolicy{MaxAttempts: 1}, problems
	}
	return resolved, nil
}

func resolveRetry(retry map[string]any) (maxAttempts, backoffMS int, reasons []string) {
	maxAttempts, backoffMS = 1, 0
	field := func(key string, minimum int64, target *int) {
		switch v := retry[key].(type) {
		case nil:
		case int64:
			if v >= minimum {
				*target = int(v)
				return
			}
			reasons = append(reasons, fmt.Sprintf(`node retry policy %q must be at least %d, got %d`, key, minimum, v))
		default:
			reasons = append(reasons, fmt.Sprintf(`node retry policy %q must be an integer, got %s`, key, describeValue(v)))
		}
	}
	field(RetryMaxAttempts, 1, &maxAttempts)
	field(RetryBackoffMS, 0, &backoffMS)
	var unknown []string
	for _, k := range value.SortedKeys(retry) {
		if k != RetryMaxAttempts && k != RetryBackoffMS {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		reasons = append(reasons, fmt.Sprintf(`node retry policy has unknown keys %s; only "max_attempts" and "backoff_ms" are allowed`, strings.Join(unknown, ", ")))
	}
	return maxAttempts, backoffMS, reasons
}

// maxSupersteps resolves the effective superstep limit: a valid graph policy
// wins, an absent or null one falls back to the runtime default (0: none).
// valid is false when the graph policy is present but not a positive integer.
func maxSupersteps(policies map[string]any, runtimeDefault int) (limit int, valid bool) {
	switch v := policies[PolicyMaxSupersteps].(type) {
	case nil:
		return runtimeDefault, true
	case int64:
		if v > 0 {
			return int(v), true
		}
	case int:
		if v > 0 {
			return v, true
		}
	}
	return 0, false
}

// describeValue renders an offending value for a message: canonical JSON
// where possible, else its Go type.
func describeValue(v any) string {
	if b, err := value.Canonical(v); err == nil {
		return string(b)
	}
	return fmt.Sprintf("%T", v)
}
