package ports_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const secret = "5f0c3c1e-9a4b-4f7e-8c2d-3b1a2d4e6f80"

func TestClaimTokenRedactsEveryRendering(t *testing.T) {
	t.Parallel()
	tok := ports.NewClaimToken(secret)
	holder := struct {
		Token ports.ClaimToken
		Ptr   *ports.ClaimToken
	}{tok, &tok}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		out = append(out, fmt.Sprintf(verb, tok), fmt.Sprintf(verb, holder), fmt.Sprintf(verb, []ports.ClaimToken{tok}))
	}
	out = append(out, tok.String(), fmt.Sprint(tok), fmt.Errorf("wrapped %v: %w", tok, ports.ErrClaimLost).Error())
	js, err := json.Marshal(holder)
	require.NoError(t, err)
	out = append(out, string(js))
	text, err := tok.MarshalText()
	require.NoError(t, err)
	out = append(out, string(text))
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "token", tok, "holder", holder)
	out = append(out, logged.String())
	for _, s := range out {
		assert.NotContains(t, s, secret)
		assert.NotContains(t, s, "5f0c3c1e")
	}
	assert.Equal(t, secret, tok.Reveal(), "adapters can still read it")
}

func TestClaimTokenComparesByValue(t *testing.T) {
	t.Parallel()
	assert.Equal(t, ports.NewClaimToken(secret), ports.NewClaimToken(secret))
	assert.NotEqual(t, ports.NewClaimToken(secret), ports.NewClaimToken("other"))
	assert.True(t, ports.ClaimToken{}.IsZero())
	assert.False(t, ports.NewClaimToken(secret).IsZero())
}
