// Command oidc-peer is the OpenID provider of the tests (docs/identity.md): zitadel/oidc's own
// example provider (its storage, login page and endpoints, unchanged), with three things added
// for the broker: it trusts the broker's signed assertions as subject tokens of an OAuth 2.0
// Token Exchange (RFC 8693), verified against the broker's JWKS; the broker's client gets its
// access tokens as JWTs, so an agent verifies them against this provider's keys; and it can be
// told to refuse some subjects (invalid_grant), as an identity provider's policy would.
//
// Settings (environment):
//
//	OIDC_PEER_PORT            port to listen on, on 127.0.0.1 (0 or unset: any free port)
//	OIDC_PEER_CLIENT          the broker's client, id:secret
//	OIDC_PEER_REDIRECT        the broker's redirect URIs, comma separated (the code flow)
//	OIDC_PEER_TRUST_ISSUER    the broker's issuer; its JWKS is <issuer>/.well-known/jwks.json
//	OIDC_PEER_TRUST_AUDIENCE  the aud the broker's assertions must carry to be exchanged here
//	OIDC_PEER_DENY            subjects whose exchange is refused, comma separated
//
// It prints one line `listening <issuer>` on stdout once it serves, then one JSON line per token
// exchange it answered: {"exchange":"ok"|"refused","subject":…,"audience":[…]}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// trusting is the example's storage, trusting the broker's assertions for token exchange.
type trusting struct {
	*storage.Storage
	issuer   string
	audience string
	keys     oidc.KeySet
	deny     map[string]bool
	clientID string
	out      *lineWriter
}

var errNotTrusted = errors.New("not an assertion of the trusted issuer")

// VerifyExchangeSubjectToken accepts a JWT the broker signed: its signature by a key of the
// broker's JWKS, its issuer, audience and expiry. Anything else is refused (invalid_request).
func (t *trusting) VerifyExchangeSubjectToken(ctx context.Context, token string, tokenType oidc.TokenType) (string, string, map[string]any, error) {
	if tokenType != oidc.JWTTokenType {
		return "", "", nil, errNotTrusted
	}
	claims := new(oidc.IDTokenClaims)
	payload, err := oidc.ParseToken(token, claims)
	if err != nil {
		return "", "", nil, err
	}
	if err := oidc.CheckIssuer(claims, t.issuer); err != nil {
		return "", "", nil, err
	}
	if err := oidc.CheckSignature(ctx, token, payload, claims, []string{"ES256", "EdDSA"}, t.keys); err != nil {
		t.out.line(map[string]any{"exchange": "refused", "why": "signature"})
		return "", "", nil, err
	}
	if err := oidc.CheckAudience(claims, t.audience); err != nil {
		t.out.line(map[string]any{"exchange": "refused", "why": "audience"})
		return "", "", nil, err
	}
	if err := oidc.CheckExpiration(claims, 0); err != nil {
		t.out.line(map[string]any{"exchange": "refused", "why": "expired"})
		return "", "", nil, err
	}
	return token, claims.Subject, claims.Claims, nil
}

func (t *trusting) VerifyExchangeActorToken(context.Context, string, oidc.TokenType) (string, string, map[string]any, error) {
	return "", "", nil, errNotTrusted
}

// ValidateTokenExchangeRequest: a subject the broker vouched for is exchanged for an access
// token unless it is denied; every other request is the example's to judge.
func (t *trusting) ValidateTokenExchangeRequest(ctx context.Context, request op.TokenExchangeRequest) error {
	if request.GetExchangeSubjectTokenType() != oidc.JWTTokenType {
		return t.Storage.ValidateTokenExchangeRequest(ctx, request)
	}
	subject := request.GetExchangeSubject()
	if t.deny[subject] {
		t.out.line(map[string]any{"exchange": "refused", "subject": subject, "why": "denied"})
		return oidc.ErrInvalidGrant().WithDescription("this subject may not act here")
	}
	if request.GetRequestedTokenType() == "" {
		request.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if request.GetRequestedTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued for assertions")
	}
	request.SetCurrentScopes(request.GetScopes())
	t.out.line(map[string]any{"exchange": "ok", "subject": subject, "audience": request.GetAudience()})
	return nil
}

// jwtClient is a client whose access tokens are JWTs (the example's web clients' are opaque).
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (t *trusting) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	client, err := t.Storage.GetClientByClientID(ctx, id)
	if err != nil || id != t.clientID {
		return client, err
	}
	return jwtClient{client}, nil
}

type lineWriter struct{ mu sync.Mutex }

func (w *lineWriter) line(v map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	port := os.Getenv("OIDC_PEER_PORT")
	if port == "" {
		port = "0"
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		logger.Error("listen", "error", err)
		os.Exit(1)
	}
	issuer := fmt.Sprintf("http://127.0.0.1:%d/", listener.Addr().(*net.TCPAddr).Port)

	id, secret, ok := strings.Cut(os.Getenv("OIDC_PEER_CLIENT"), ":")
	if !ok || id == "" || secret == "" {
		logger.Error("OIDC_PEER_CLIENT must be id:secret")
		os.Exit(2)
	}
	storage.RegisterClients(storage.WebClient(id, secret, list(os.Getenv("OIDC_PEER_REDIRECT"))...))

	trusted := strings.TrimRight(os.Getenv("OIDC_PEER_TRUST_ISSUER"), "/")
	deny := map[string]bool{}
	for _, s := range list(os.Getenv("OIDC_PEER_DENY")) {
		deny[s] = true
	}
	out := &lineWriter{}
	store := &trusting{
		Storage:  storage.NewStorage(storage.NewUserStore(issuer)),
		issuer:   trusted,
		audience: os.Getenv("OIDC_PEER_TRUST_AUDIENCE"),
		keys:     rp.NewRemoteKeySet(&http.Client{Timeout: 5 * time.Second}, trusted+"/.well-known/jwks.json"),
		deny:     deny,
		clientID: id,
		out:      out,
	}
	router := exampleop.SetupServer(issuer, store, logger, false)
	server := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening %s\n", issuer)
	if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "error", err)
		os.Exit(1)
	}
}
