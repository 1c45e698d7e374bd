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
// account), workers at a time, until ctx ends. Requests wait in nats.go's
// pending queue of the subscription (its default limits); one the callout
// does not answer within the server's auth timeout is refused by the server.
func Serve(ctx context.Context, nc *nats.Conn, s *Service, workers int) error {
	if workers < 1 {
		workers = 1
	}
	slots := make(chan struct{}, workers)
	var wg sync.WaitGroup
	sub, err := nc.QueueSubscribe(Subject, queue, func(m *nats.Msg) {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.handle(ctx, m)
		})
	})
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", Subject, err)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return fmt.Errorf("subscribing to %s: %w", Subject, err)
	}
	<-ctx.Done()
	err = sub.Drain()
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
