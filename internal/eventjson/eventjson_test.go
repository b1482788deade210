package eventjson_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/go-faster/jx"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/http/oapi"
)

// The encoders of the bodies stored and sent before eventjson, kept here to
// prove that every body is byte for byte what those wrote: the NewPlant
// payload (plantstore.Plant.WebhookPayload), the envelope
// (plantstore.PlantEvent.EnvelopeParts, with the seq between its parts),
// the ping (service's pingPayload) and GET /events (the generated
// oapi.PlantEvent encoder).

func oldPayload(p *plantstore.Plant) []byte {
	n := len(`{"id":-9223372036854775808,"name":""}`) + len(p.Name) + len(p.Name)/8
	if p.Tag != nil {
		n += len(`,"tag":""`) + len(*p.Tag) + len(*p.Tag)/8
	}
	var e jx.Encoder
	e.SetBytes(make([]byte, 0, n))
	e.ObjStart()
	e.FieldStart("id")
	e.Int64(p.ID)
	e.FieldStart("name")
	e.Str(p.Name)
	if p.Tag != nil {
		e.FieldStart("tag")
		e.Str(*p.Tag)
	}
	e.ObjEnd()
	return e.Bytes()
}

func oldEnvelope(typ, id string, seq int64, createdAt time.Time, data []byte) []byte {
	var w jx.Encoder
	w.SetBytes(make([]byte, 0, 40+len(typ)+len(id)))
	w.ObjStart()
	w.FieldStart("type")
	w.Str(typ)
	w.FieldStart("id")
	w.Str(id)
	w.FieldStart("seq")
	prefix := w.Bytes()
	var v jx.Encoder
	v.SetBytes(make([]byte, 0, 64+len(data)))
	v.RawStr(`,"created_at":`)
	v.Str(createdAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano))
	v.RawStr(`,"data":`)
	v.Raw(data)
	v.RawStr(`}`)
	return append(strconv.AppendInt(prefix, seq, 10), v.Bytes()...)
}

func oldPing(msgID, subID string, now time.Time) []byte {
	var e jx.Encoder
	e.ObjStart()
	e.FieldStart("type")
	e.Str("ping")
	e.FieldStart("id")
	e.Str(msgID)
	e.FieldStart("created_at")
	e.Str(now.Format(time.RFC3339Nano))
	e.FieldStart("data")
	e.ObjStart()
	e.FieldStart("webhook")
	e.Str(subID)
	e.ObjEnd()
	e.ObjEnd()
	return e.Bytes()
}

// oldEvents is GET /events as the generated server encoded it
// (internal/http/events.go's toAPIEvent, then ogen's response encoder).
func oldEvents(t *testing.T, events []*plantstore.Event) []byte {
	var e jx.Encoder
	e.ArrStart()
	for _, ev := range events {
		data := oldPayload(&plantstore.Plant{ID: ev.PlantID, Name: ev.Name, Tag: ev.Tag})
		out := oapi.PlantEvent{Type: oapi.EventType(ev.Type), ID: ev.ID, Seq: ev.Seq,
			CreatedAt: ev.CreatedAt.UTC().Truncate(time.Microsecond)}
		if err := out.Data.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		out.Encode(&e)
	}
	e.ArrEnd()
	return e.Bytes()
}

func ptr[T any](v T) *T { return &v }

// events are events whose names and tags hold every character the two
// string encoders ever treated differently, and times of every precision.
func events() []*plantstore.Event {
	names := []string{"Fern", `a "quoted" \ name`, "<b>&amp;</b>", "tab\there\nnew\rline", "\x01\x08\x0c\x1f\x7f",
		"line\u2028sep\u2029", "ünïcödé 🌿", "/slash", ""}
	tags := []*string{nil, ptr(""), ptr("green"), ptr("<&>"), ptr("\u2028\b")}
	times := []time.Time{
		time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC),
		time.Date(2025, 3, 1, 12, 0, 0, 120000000, time.FixedZone("x", 3600)),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	var out []*plantstore.Event
	i := 0
	for _, name := range names {
		for _, tag := range tags {
			i++
			out = append(out, &plantstore.Event{Owner: "alice", Seq: int64(i * 997), ID: "evt_0123456789abcdef01234567",
				Type: plantstore.EventTypes[i%3], PlantID: int64(i*1_000_003) - 5_000_000, Name: name, Tag: tag,
				CreatedAt: times[i%len(times)]})
		}
	}
	out = append(out, &plantstore.Event{Seq: 1<<63 - 1, ID: "evt_x", Type: plantstore.EventPlantDeleted, PlantID: -1 << 63, Name: "min"})
	return out
}

func TestSameBytesAsBefore(t *testing.T) {
	for i, e := range events() {
		data := oldPayload(&plantstore.Plant{ID: e.PlantID, Name: e.Name, Tag: e.Tag})
		if got := eventjson.AppendPlant(nil, e); string(got) != string(data) {
			t.Errorf("event %d: NewPlant\n%s\nwant\n%s", i, got, data)
		}
		env := oldEnvelope(e.Type, e.ID, e.Seq, e.CreatedAt, data)
		if got := eventjson.AppendEnvelope(nil, e); string(got) != string(env) {
			t.Errorf("event %d: envelope\n%s\nwant\n%s", i, got, env)
		}
		// A delivery renders the same bytes as the write-time encoders did.
		task := &plantstore.Task{MessageID: e.MessageID(), Event: *e}
		if got := eventjson.Body(task); string(got) != string(data) {
			t.Errorf("event %d: untyped delivery\n%s\nwant\n%s", i, got, data)
		}
		task.Body = plantstore.BodyEvent
		if got := eventjson.Body(task); string(got) != string(env) {
			t.Errorf("event %d: typed delivery\n%s\nwant\n%s", i, got, env)
		}
	}
	evs := events()
	if got, want := eventjson.AppendEvents(nil, evs), oldEvents(t, evs); string(got) != string(want) {
		t.Errorf("GET /events\n%s\nwant\n%s", got, want)
	}
	if got, want := eventjson.AppendEvents(nil, nil), oldEvents(t, nil); string(got) != string(want) {
		t.Errorf("GET /events of none: %s, want %s", got, want)
	}
	for _, at := range []time.Time{time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)} {
		task := &plantstore.Task{MessageID: "msg_0123456789abcdef01234567", SubscriptionID: "whk_0123456789abcdef", Body: plantstore.BodyPing, CreatedAt: at}
		if got, want := eventjson.Body(task), oldPing(task.MessageID, task.SubscriptionID, at); string(got) != string(want) {
			t.Errorf("ping\n%s\nwant\n%s", got, want)
		}
	}
}

// TestGolden pins the bytes themselves: what receivers and clients see.
func TestGolden(t *testing.T) {
	e := &plantstore.Event{Owner: "alice", Seq: 3, ID: "evt_0123456789abcdef01234567", Type: plantstore.EventPlantUpdated,
		PlantID: 7, Name: `Fern <"big">`, Tag: ptr("green"), CreatedAt: time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))}
	timed := *e
	timed.PlantCreatedAt, timed.PlantUpdatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)), e.CreatedAt
	for _, tc := range []struct{ name, got, want string }{
		{"NewPlant", string(eventjson.AppendPlant(nil, e)), `{"id":7,"name":"Fern <\"big\">","tag":"green"}`},
		{"Envelope", string(eventjson.AppendEnvelope(nil, e)),
			`{"type":"plant.updated","id":"evt_0123456789abcdef01234567","seq":3,"created_at":"2025-03-01T11:00:00.123456Z","data":{"id":7,"name":"Fern <\"big\">","tag":"green"}}`},
		{"Events", string(eventjson.AppendEvents(nil, []*plantstore.Event{e, {ID: "evt_1", Seq: 4, Type: plantstore.EventPlantDeleted, PlantID: 8, Name: "Moss", CreatedAt: time.Unix(0, 0)}})),
			`[{"type":"plant.updated","id":"evt_0123456789abcdef01234567","seq":3,"created_at":"2025-03-01T11:00:00.123456Z","data":{"id":7,"name":"Fern <\"big\">","tag":"green"}},` +
				`{"type":"plant.deleted","id":"evt_1","seq":4,"created_at":"1970-01-01T00:00:00Z","data":{"id":8,"name":"Moss"}}]`},
		{"Ping", string(eventjson.AppendPing(nil, "msg_1", "whk_1", time.Date(2025, 3, 1, 12, 0, 0, 5, time.UTC))),
			`{"type":"ping","id":"msg_1","created_at":"2025-03-01T12:00:00.000000005Z","data":{"webhook":"whk_1"}}`},
		{"StoredBody", string(eventjson.Body(&plantstore.Task{Event: *e, StoredBody: []byte(`{"id":7,"name":"\u003c"}`)})), `{"id":7,"name":"\u003c"}`},
		{"AfterBytes", string(eventjson.AppendPlant([]byte("data: "), &plantstore.Event{PlantID: 1, Name: "a"})), `data: {"id":1,"name":"a"}`},
		// The plant's times: in the envelope's data, six fraction digits in
		// UTC; never in the untyped NewPlant body.
		{"EnvelopeTimes", string(eventjson.AppendEnvelope(nil, &timed)),
			`{"type":"plant.updated","id":"evt_0123456789abcdef01234567","seq":3,"created_at":"2025-03-01T11:00:00.123456Z","data":{"id":7,"name":"Fern <\"big\">","tag":"green",` +
				`"created_at":"2024-12-31T23:00:00.000000Z","updated_at":"2025-03-01T11:00:00.123456Z"}}`},
		{"NewPlantNoTimes", string(eventjson.Body(&plantstore.Task{Event: timed})), `{"id":7,"name":"Fern <\"big\">","tag":"green"}`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, tc.got, tc.want)
		}
	}
	if got, want := e.MessageID(), "msg_0123456789abcdef01234567"; got != want || plantstore.EventIDOf(got) != e.ID {
		t.Errorf("MessageID %q, want %q and back", got, want)
	}
}
