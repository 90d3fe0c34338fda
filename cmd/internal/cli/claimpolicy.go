package cli

import "github.com/docketgo/docket/app/engine"

// Values of --claim-policy.
const (
	claimPolicyLegacy     = "legacy"
	claimPolicyTenantFair = "tenant-fair"
)

// claimPolicy is the claim policy of this invocation's store: the worker's
// --claim-policy, by default tenant-fair with --tenant (tenant-required
// mode allows no other) and legacy otherwise.
func (a *app) claimPolicy() (engine.ClaimPolicy, error) {
	switch a.claimPolicyFlag {
	case "":
		if a.tenant != "" {
			return engine.ClaimPolicyTenantFair, nil
		}
		return engine.ClaimPolicyLegacy, nil
	case claimPolicyLegacy:
		if a.tenant != "" {
			return "", usagef("--tenant selects tenant-required mode, which claims only with --claim-policy %s, not %s", claimPolicyTenantFair, claimPolicyLegacy)
		}
		return engine.ClaimPolicyLegacy, nil
	case claimPolicyTenantFair:
		return engine.ClaimPolicyTenantFair, nil
	}
	return "", usagef("--claim-policy must be %q or %q, not %q", claimPolicyLegacy, claimPolicyTenantFair, a.claimPolicyFlag)
}
