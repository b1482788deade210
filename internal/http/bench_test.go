package http_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore"
	plantstorehttp "github.com/plantstore/plantstore/internal/http"
	"github.com/plantstore/plantstore/internal/http/oapi"
	"github.com/plantstore/plantstore/internal/slogbuf"
)

// BenchmarkAddPlant sends POST /plants over real HTTP on 127.0.0.1 from
// GOMAXPROCS goroutines at once, to a server on a SQLite file with the
// default durability; every request creates a new plant. It measures the
// whole path: HTTP, auth, decoding, the store's durable insert, logging.
func BenchmarkAddPlant(b *testing.B) {
	ts := MustOpenServer(b, func(s *TestServer) {
		s.Logger = slog.New(slogbuf.New(io.Discard, false, nil)) // as serve logs, discarded
		s.Service.TokenCacheTTL = 2 * time.Second                // the serve default
	})
	auth := "Bearer " + ts.Token(b, "bench")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	b.SetParallelism(32) // 32 clients per GOMAXPROCS: 64 on two cores, like wrk -c64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := next.Add(1)
			body := fmt.Sprintf(`{"id":%d,"name":"plant %d","tag":"bench"}`, id, id)
			req, err := http.NewRequest(http.MethodPost, ts.URL+"/plants", bytes.NewReader([]byte(body)))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Authorization", auth)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("POST /plants: status %d", resp.StatusCode)
				return
			}
		}
	})
}

var benchNewPlantBody = []byte(`{"id":1234567,"name":"Monstera deliciosa","tag":"tropical"}`)

// BenchmarkDecodeNewPlant compares, on the same body in the same run, the
// request decoding and validation plantstore does (sub-benchmark "server":
// the body checks of prepareBody, then the generated ogen/jx decoder and
// validators, then plantstore.Plant.Validate), the generated decoder alone
// ("ogen"), and what a plain encoding/json server does ("encoding_json").
// The ns/op ratios show what the contract's strictness costs per request.
func BenchmarkDecodeNewPlant(b *testing.B) {
	b.Run("server", func(b *testing.B) {
		b.SetBytes(int64(len(benchNewPlantBody)))
		b.ReportAllocs()
		for b.Loop() {
			// What prepareBody checks before the decoder runs.
			if err := plantstorehttp.CheckBody(benchNewPlantBody); err != nil {
				b.Fatal(err)
			}
			p, err := decodeOgen(benchNewPlantBody)
			if err != nil {
				b.Fatal(err)
			}
			if err := toPlant(p).Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("checks", func(b *testing.B) {
		// prepareBody's checks alone.
		b.SetBytes(int64(len(benchNewPlantBody)))
		b.ReportAllocs()
		for b.Loop() {
			if err := plantstorehttp.CheckBody(benchNewPlantBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ogen", func(b *testing.B) {
		b.SetBytes(int64(len(benchNewPlantBody)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeOgen(benchNewPlantBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(benchNewPlantBody)))
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeStdlib(benchNewPlantBody); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// decodeOgen decodes and validates a body as the generated
// decodeAddPlantRequest does.
func decodeOgen(body []byte) (*oapi.NewPlant, error) {
	d := jx.DecodeBytes(body)
	var p oapi.NewPlant
	if err := p.Decode(d); err != nil {
		return nil, err
	}
	if err := d.Skip(); err != io.EOF {
		return nil, errors.New("unexpected trailing data")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func toPlant(p *oapi.NewPlant) *plantstore.Plant {
	out := &plantstore.Plant{Owner: "bench", ID: p.ID, Name: p.Name}
	if tag, ok := p.Tag.Get(); ok {
		out.Tag = &tag
	}
	return out
}

// decodeStdlib is the baseline server's decoding (internal/bench/baseline): a
// json.Decoder into pointer fields, required fields and name length checked.
func decodeStdlib(body []byte) error {
	var p struct {
		ID   *int64  `json:"id"`
		Name *string `json:"name"`
		Tag  *string `json:"tag"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected trailing data")
	}
	if p.ID == nil || p.Name == nil {
		return errors.New("id and name are required")
	}
	if n := utf8.RuneCountInString(*p.Name); n < 1 || n > plantstore.MaxNameLength {
		return errors.New("bad name length")
	}
	return nil
}
