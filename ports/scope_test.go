package ports_test

import (
	"strings"
	"testing"

	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
)

func TestScopeVisibility(t *testing.T) {
	t.Parallel()
	acme, other := ports.Tenant("acme"), ports.Tenant("other")
	tests := []struct {
		name  string
		scope ports.Scope
		owner ports.OwnerScope
		sees  bool
	}{
		{"system sees tenant rows", ports.System(), acme, true},
		{"system sees tenantless rows", ports.System(), ports.Tenantless(), true},
		{"a tenant sees its own rows", acme, ports.Tenant("acme"), true},
		{"a tenant does not see another tenant", other, acme, false},
		{"a tenant does not see tenantless rows", acme, ports.Tenantless(), false},
		{"tenantless does not see tenant rows", ports.Tenantless(), acme, false},
		{"tenantless sees tenantless rows", ports.Tenantless(), ports.Tenantless(), true},
		{"the zero scope sees nothing", ports.Scope{}, ports.Tenantless(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.sees, tt.scope.Sees(tt.owner))
		})
	}
}

func TestScopeValidation(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, ports.Scope{}.Validate(), ports.ErrInvalidScope)
	assert.ErrorIs(t, ports.Tenant("").Validate(), ports.ErrInvalidScope, "an empty tenant id is no scope")
	assert.ErrorIs(t, ports.Tenant("acme\xff").Validate(), ports.ErrInvalidScope, "nor is one a store cannot hold")
	assert.ErrorIs(t, ports.Tenant("ac\x00me").Validate(), ports.ErrInvalidScope)
	assert.True(t, ports.TextID("tenant-é"))
	atLimit := strings.Repeat("é", ports.MaxIDBytes/2) // the limit counts bytes
	assert.True(t, ports.TextID(atLimit))
	assert.NoError(t, ports.Tenant(atLimit).ValidateOwner())
	assert.False(t, ports.TextID(atLimit+"a"), "one byte past the limit")
	assert.ErrorIs(t, ports.Tenant(atLimit+"a").Validate(), ports.ErrInvalidScope, "nor a tenant id past the limit")
	assert.NoError(t, ports.System().Validate())
	assert.ErrorIs(t, ports.System().ValidateOwner(), ports.ErrInvalidScope, "system owns nothing")
	assert.NoError(t, ports.Tenantless().ValidateOwner())
	assert.NoError(t, ports.Tenant("acme").ValidateOwner())
}

func TestOwnerOfAndKeys(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ports.Tenantless(), ports.OwnerOf(""))
	assert.Equal(t, ports.Tenant("acme"), ports.OwnerOf("acme"))
	assert.Equal(t, "acme", ports.Tenant("acme").Key())
	assert.Equal(t, "", ports.Tenantless().Key())
	assert.Equal(t, "tenant(acme)", ports.Tenant("acme").String())
	assert.Equal(t, "system", ports.System().String())
	assert.Equal(t, "tenantless", ports.Tenantless().String())
	assert.True(t, ports.System().IsSystem())
	assert.True(t, ports.Tenantless().IsTenantless())
}
