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

// PlantTimeFormat is the format of a plant's created_at and updated_at,
// as the contract's Plant has them: RFC 3339 in UTC with exactly six
// fraction digits.
const PlantTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// AppendPlant appends the event's plant as the contract's NewPlant, the
// body the seed's webhook declares: {"id","name","tag"}, tag absent when
// unset. It has no times: they are readOnly members of Plant, which a
// request body (and a delivery is one) does not carry, and receivers built
// from the seed take exactly these members.
func AppendPlant(b []byte, e *plantstore.Event) []byte {
	var w jx.Encoder
	w.SetBytes(b)
	writePlant(&w, e, false)
	return w.Bytes()
}

// writePlant writes the event's plant, with its times when times is set
// and they are known (the contract's Plant).
func writePlant(w *jx.Encoder, e *plantstore.Event, times bool) {
	w.ObjStart()
	w.FieldStart("id")
	w.Int64(e.PlantID)
	w.FieldStart("name")
	w.Str(e.Name)
	if e.Tag != nil {
		w.FieldStart("tag")
		w.Str(*e.Tag)
	}
	if times {
		writeTime(w, "created_at", e.PlantCreatedAt)
		writeTime(w, "updated_at", e.PlantUpdatedAt)
	}
	w.ObjEnd()
}

// writeTime writes field name with t in PlantTimeFormat, unless t is zero
// (not known).
func writeTime(w *jx.Encoder, name string, t time.Time) {
	if t.IsZero() {
		return
	}
	var buf [len(PlantTimeFormat) + 8]byte
	w.FieldStart(name)
	w.ByteStr(plantstore.TruncateTime(t).AppendFormat(buf[:0], PlantTimeFormat))
}

// AppendEnvelope appends the event as the contract's PlantEvent:
// {"type","id","seq","created_at","data"}, data the contract's Plant: as
// AppendPlant, and the plant's created_at and updated_at where known.
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
	writePlant(w, e, true)
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
