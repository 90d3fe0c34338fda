package engine

import "github.com/docketgo/docket/domain/claim"

// ClaimPolicy names the claim policy an engine's backend admits runs with.
// The backend executes the policy (it is built with one, e.g.
// memory.Options.Policy or postgres.Config.Policy); Config.ClaimPolicy
// says which one the engine expects, and New checks the backend against
// it.
type ClaimPolicy string

// Claim policies.
const (
	// ClaimPolicyLegacy is FIFO admission (claim.Legacy): tenant-blind,
	// oldest due run first. The default in TenantNone mode.
	ClaimPolicyLegacy ClaimPolicy = "legacy"
	// ClaimPolicyTenantFair is tenant-fair admission
	// (claim.WindowedInterleave): each claim batch is spread breadth first
	// over a random sample of the tenants with due work, and a tenant's
	// runs already underway come before its new ones. The default, and
	// the only policy allowed, in TenantRequired mode.
	ClaimPolicyTenantFair ClaimPolicy = "tenant_fair"
)

// Policy returns the claim.Policy to build a backend with: claim.Legacy
// or claim.WindowedInterleave (nil for an unknown name).
func (p ClaimPolicy) Policy() claim.Policy {
	switch p {
	case ClaimPolicyLegacy:
		return claim.Legacy
	case ClaimPolicyTenantFair:
		return claim.WindowedInterleave
	}
	return nil
}

// resolveClaimPolicy applies ClaimPolicy's default and checks it against
// the tenant mode and the backend (spec: tenant-required mode runs only
// under the tenant-fair policy). An empty ClaimPolicy means tenant-fair in
// TenantRequired mode and otherwise whatever the backend runs. Call after
// TenantMode is resolved.
func (c *Config) resolveClaimPolicy(bad func(field, reason string)) {
	switch c.ClaimPolicy {
	case "", ClaimPolicyLegacy, ClaimPolicyTenantFair:
	default:
		bad("ClaimPolicy", `must be "legacy" or "tenant_fair"`)
		return
	}
	if c.TenantMode == TenantRequired {
		if c.ClaimPolicy == ClaimPolicyLegacy {
			bad("ClaimPolicy", "must be tenant_fair in TenantRequired mode")
			return
		}
		c.ClaimPolicy = ClaimPolicyTenantFair
	}
	if c.Backend == nil {
		return
	}
	fair := c.Backend.Capabilities().TenantFair
	switch {
	case c.ClaimPolicy == "" && fair:
		c.ClaimPolicy = ClaimPolicyTenantFair
	case c.ClaimPolicy == "":
		c.ClaimPolicy = ClaimPolicyLegacy
	case c.ClaimPolicy == ClaimPolicyTenantFair && !fair:
		bad("ClaimPolicy", "is tenant_fair but the backend admits with a FIFO policy: "+
			"build the backend with claim.WindowedInterleave (ClaimPolicyTenantFair.Policy())")
	case c.ClaimPolicy == ClaimPolicyLegacy && fair:
		bad("ClaimPolicy", "is legacy but the backend admits with a tenant-fair policy: "+
			"build the backend with claim.Legacy")
	}
}
