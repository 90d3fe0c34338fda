package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	docketotel "github.com/docketgo/docket/adapters/otel"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/ports"
)

// Health rule of /healthz: the store counts as not answering once a claim
// poll has gone unanswered (failed, or still waiting) for more than
// healthPolls poll intervals, and never less than healthFloor, so that a
// short --poll-interval does not turn one slow claim into a failed check.
const (
	healthPolls = 3
	healthFloor = 10 * time.Second
)

// metricsServer is the worker's --metrics-addr endpoint: /metrics serves
// the engine's docket.* metrics (adapters/otel on an OpenTelemetry meter
// provider read by the Prometheus exporter) and the Go runtime's, and
// /healthz the engine's Health.
type metricsServer struct {
	listener  net.Listener
	server    *http.Server
	provider  *sdkmetric.MeterProvider
	telemetry ports.Telemetry
	engine    atomic.Pointer[engine.Engine] // nil until the engine is built
	closing   sync.Once
}

// newMetricsServer binds addr and builds the telemetry the engine reports
// to. Nothing is served until serve.
func newMetricsServer(addr string) (*metricsServer, error) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, failuref("--metrics-addr: %v", err)
	}
	// The worker names itself; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES still override it.
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "docket-worker")), resource.Environment())
	if err != nil {
		return nil, failuref("--metrics-addr: %v", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res))
	tel, err := docketotel.New(docketotel.Config{MeterProvider: provider, TracerProvider: tracenoop.NewTracerProvider()})
	if err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, failuref("--metrics-addr: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, usagef("--metrics-addr: cannot listen on %q: %v", addr, err)
	}
	s := &metricsServer{listener: ln, provider: provider, telemetry: tel}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", s.healthz)
	s.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// addr is the bound address (the port chosen for ":0").
func (s *metricsServer) addr() string { return s.listener.Addr().String() }

// serve starts answering; /healthz reports e.
func (s *metricsServer) serve(e *engine.Engine) {
	s.engine.Store(e)
	go func() { _ = s.server.Serve(s.listener) }()
}

// close stops serving: requests in progress get up to grace to finish.
// It is safe to call before serve, and only the first call does anything.
func (s *metricsServer) close(grace time.Duration) {
	s.closing.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if s.engine.Load() == nil {
			_ = s.listener.Close()
		} else if err := s.server.Shutdown(ctx); err != nil {
			_ = s.server.Close()
		}
		_ = s.provider.Shutdown(ctx)
	})
}

// healthJSON is /healthz's body.
type healthJSON struct {
	// Status is "ok" (200), or "starting", "stopping", "stopped",
	// "inactive_engine", "store_unanswered" or another claim policy
	// unavailability reason (503).
	Status    string `json:"status"`
	Listening bool   `json:"listening"`
	// LastPollSecondsAgo is the time since the store last answered a
	// claim poll (absent: none yet).
	LastPollSecondsAgo *float64 `json:"last_poll_seconds_ago,omitempty"`
	// UnansweredSeconds is how long the oldest claim poll the store has
	// not answered since has waited (absent: the latest was answered).
	UnansweredSeconds *float64 `json:"unanswered_seconds,omitempty"`
}

func (s *metricsServer) healthz(w http.ResponseWriter, _ *http.Request) {
	h := engine.Health{State: engine.HealthCreated}
	if e := s.engine.Load(); e != nil {
		h = e.Health()
	}
	body, healthy := healthOf(h, time.Now())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// healthOf applies /healthz's rule (docs/operations.md): healthy while
// the engine runs, is not the inactive engine of its schema, and no claim
// poll has gone unanswered too long. A poll the store refused under the
// engine's claim policy was answered, by a refusal: it is reported by the
// refusal's reason, not as the store not answering.
func healthOf(h engine.Health, now time.Time) (healthJSON, bool) {
	body := healthJSON{Status: h.State, Listening: h.Listening}
	if !h.LastPoll.IsZero() {
		body.LastPollSecondsAgo = seconds(now.Sub(h.LastPoll))
	}
	if h.State != engine.HealthRunning {
		if h.State == engine.HealthCreated {
			body.Status = "starting"
		}
		return body, false
	}
	body.Status = "ok"
	if !h.UnansweredSince.IsZero() {
		body.UnansweredSeconds = seconds(now.Sub(h.UnansweredSince))
	}
	// Another engine made the other claim policy the schema's: this one
	// claims nothing until it is restarted, however well the store answers.
	if h.ClaimPolicyUnavailable == ports.UnavailableInactiveEngine {
		body.Status = ports.UnavailableInactiveEngine
		return body, false
	}
	if !h.UnansweredSince.IsZero() && now.Sub(h.UnansweredSince) > max(healthPolls*h.PollInterval, healthFloor) {
		body.Status = "store_unanswered"
		if h.ClaimPolicyUnavailable != "" {
			body.Status = h.ClaimPolicyUnavailable
		}
		return body, false
	}
	return body, true
}

func seconds(d time.Duration) *float64 {
	v := max(d, 0).Round(time.Millisecond).Seconds()
	return &v
}
