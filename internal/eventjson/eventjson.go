// Package eventjson renders every JSON body of an event, on go-faster/jx: the
// plant as the contract's NewPlant (the body of an untyped subscription's
// deliveries, and an event's data), the PlantEvent envelope (a typed
// subscription's deliveries, the items of GET /events and the data of the
// stream's messages), and a ping. It is the one encoder of those bodies: the
// webhook dispatcher and pinger render a Task with Body when they send it,
// http renders GET /events with AppendEvents and the stream with
// AppendEnvelope. The row stores keep facts (plantstore.Event, and a
// delivery's Body), never these bytes.
package eventjson

import (
	"time"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore"
)

// TimeFormat is the format of an envelope's created_at: RFC 3339 with as
// many fraction digits as needed (time.RFC3339Nano), in UTC, of a time cut
// to the microsecond, PostgreSQL's precision: the same on every backend and
// every read.
const TimeFormat = time.RFC3339Nano

// AppendPlant appends the event's plant as the contract's NewPlant (and
// Plant): {"id","name","tag"}, tag absent when unset.
func AppendPlant(b []byte, e *plantstore.Event) []byte {
	var w jx.Encoder
	w.SetBytes(b)
	writePlant(&w, e)
	return w.Bytes()
}

func writePlant(w *jx.Encoder, e *plantstore.Event) {
	w.ObjStart()
	w.FieldStart("id")
	w.Int64(e.PlantID)
	w.FieldStart("name")
	w.Str(e.Name)
	if e.Tag != nil {
		w.FieldStart("tag")
		w.Str(*e.Tag)
	}
	w.ObjEnd()
}

// AppendEnvelope appends the event as the contract's PlantEvent:
// {"type","id","seq","created_at","data"}, data the plant (AppendPlant).
func AppendEnvelope(b []byte, e *plantstore.Event) []byte {
	var w jx.Encoder
	w.SetBytes(b)
	writeEnvelope(&w, e)
	return w.Bytes()
}

func writeEnvelope(w *jx.Encoder, e *plantstore.Event) {
	w.ObjStart()
	w.FieldStart("type")
	w.Str(e.Type)
	w.FieldStart("id")
	w.Str(e.ID)
	w.FieldStart("seq")
	w.Int64(e.Seq)
	w.FieldStart("created_at")
	w.Str(e.CreatedAt.UTC().Truncate(time.Microsecond).Format(TimeFormat))
	w.FieldStart("data")
	writePlant(w, e)
	w.ObjEnd()
}

// AppendEvents appends events as a JSON array of envelopes: the body of GET
// /events.
func AppendEvents(b []byte, events []*plantstore.Event) []byte {
	var w jx.Encoder
	w.SetBytes(b)
	w.ArrStart()
	for _, e := range events {
		writeEnvelope(&w, e)
	}
	w.ArrEnd()
	return w.Bytes()
}

// AppendPing appends a ping: {"type":"ping","id","created_at","data":
// {"webhook"}}, id the ping's message id, created_at at in RFC 3339 with
// as many fraction digits as it has.
func AppendPing(b []byte, messageID, subscriptionID string, at time.Time) []byte {
	var w jx.Encoder
	w.SetBytes(b)
	w.ObjStart()
	w.FieldStart("type")
	w.Str("ping")
	w.FieldStart("id")
	w.Str(messageID)
	w.FieldStart("created_at")
	w.Str(at.Format(time.RFC3339Nano))
	w.FieldStart("data")
	w.ObjStart()
	w.FieldStart("webhook")
	w.Str(subscriptionID)
	w.ObjEnd()
	w.ObjEnd()
	return w.Bytes()
}

// Body returns the body POSTed for t: its StoredBody when it has one, else
// the body t.Body names, rendered from its facts.
func Body(t *plantstore.Task) []byte {
	switch {
	case t.StoredBody != nil:
		return t.StoredBody
	case t.Body == plantstore.BodyPing:
		return AppendPing(nil, t.MessageID, t.SubscriptionID, t.CreatedAt)
	case t.Body == plantstore.BodyEvent:
		return AppendEnvelope(nil, &t.Event)
	}
	return AppendPlant(nil, &t.Event)
}
