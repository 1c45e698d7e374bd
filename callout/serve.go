package callout

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Subject is where nats-server sends authorization requests.
const Subject = "$SYS.REQ.USER.AUTH"

// queue lets several callouts share the requests.
const queue = "solar-auth-callout"

// Serve answers the requests that reach nc (a service user of the callout's
// account) with workers goroutines until ctx ends. Requests wait in a
// bounded channel; one the callout cannot answer in time is refused by the
// server.
func Serve(ctx context.Context, nc *nats.Conn, s *Service, workers int) error {
	if workers < 1 {
		workers = 1
	}
	reqs := make(chan *nats.Msg, 4*workers)
	sub, err := nc.ChanQueueSubscribe(Subject, queue, reqs)
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", Subject, err)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("subscribing to %s: %w", Subject, err)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-reqs:
					s.handle(ctx, m)
				}
			}
		})
	}
	<-ctx.Done()
	err = sub.Unsubscribe()
	wg.Wait()
	return err
}

func (s *Service) handle(ctx context.Context, m *nats.Msg) {
	out, err := s.Answer(ctx, m.Data, m.Header.Get("Nats-Server-Xkey"))
	if err != nil {
		s.log().Warn("unanswerable authorization request", "err", err)
		return
	}
	if err := m.Respond(out); err != nil {
		s.log().Warn("answering", "err", err)
	}
}
