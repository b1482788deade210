package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/eventjson"
	"github.com/plantstore/plantstore/internal/service"
)

// The migration that made events and deliveries facts (SQLite's 9,
// PostgreSQL's 8) must keep every body as it was: a delivery pending
// before the upgrade is sent with the same bytes after it, and GET /events
// and the stream answer the same bytes. Each backend's test migrates a
// database to the version before, writes LegacyRows there with SQL of its
// own, migrates the rest of the way and calls CheckLegacyRows.

// LegacyRow is a row of a table as the schema before that migration has
// it: column name to value (a string, an int64, a []byte, a time.Time or
// nil).
type LegacyRow struct {
	Table  string
	Values map[string]any
}

var (
	legacyT1 = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC) // microseconds: PostgreSQL keeps no more
	legacyT2 = legacyT1.Add(time.Minute)
	legacyT3 = legacyT1.Add(2 * time.Minute)
	legacyT0 = legacyT1.Add(-24 * time.Hour) // before events existed
)

// legacyBodies are the stored bodies, byte for byte as the encoders before
// that migration wrote them, by delivery (message id, subscription id).
var legacyBodies = map[[2]string]string{
	// An untyped subscription's create: the NewPlant body (jx).
	{"msg_000000000000000000000001", "whk_000000000000000a"}: `{"id":1,"name":"Fern","tag":"green"}`,
	// A typed one's, the envelope.
	{"msg_000000000000000000000001", "whk_000000000000000b"}: `{"type":"plant.created","id":"evt_000000000000000000000001","seq":1,"created_at":"2025-03-01T12:00:00.123456Z","data":{"id":1,"name":"Fern","tag":"green"}}`,
	{"msg_000000000000000000000002", "whk_000000000000000c"}: `{"type":"plant.updated","id":"evt_000000000000000000000002","seq":2,"created_at":"2025-03-01T12:01:00.123456Z","data":{"id":1,"name":"Fern \"big\" <x> & \\ é","tag":""}}`,
	{"msg_000000000000000000000003", "whk_000000000000000b"}: `{"type":"plant.deleted","id":"evt_000000000000000000000003","seq":3,"created_at":"2025-03-01T12:02:00.123456Z","data":{"id":2,"name":"\u0001ctl\n"}}`,
	// Before events: an untyped create jx wrote, and one encoding/json
	// wrote (it escaped <, > and &; the facts would render them as they
	// are, so the migration keeps these bytes).
	{"msg_000000000000000000000009", "whk_000000000000000a"}: `{"id":9,"name":"Ivy"}`,
	{"msg_00000000000000000000000a", "whk_000000000000000a"}: `{"id":10,"name":"a\u003cb\u0026c\u2028"}`,
}

// legacyEvents are the events table's data column, by seq.
var legacyEvents = []struct {
	seq     int64
	typ     string
	plantID int64
	data    string
	at      time.Time
}{
	{1, plantstore.EventPlantCreated, 1, `{"id":1,"name":"Fern","tag":"green"}`, legacyT1},
	{2, plantstore.EventPlantUpdated, 1, `{"id":1,"name":"Fern \"big\" <x> & \\ é","tag":""}`, legacyT2},
	{3, plantstore.EventPlantDeleted, 2, `{"id":2,"name":"\u0001ctl\n"}`, legacyT3},
}

// LegacyRows returns the rows to write before the migration: three
// subscriptions of alice (untyped; typed to creates and deletes; typed to
// updates), her three events with their sequence, and six pending
// deliveries, due.
func LegacyRows() []LegacyRow {
	sub := func(id string, types any) LegacyRow {
		return LegacyRow{"webhook_subscriptions", map[string]any{"id": id, "owner": "alice", "url": "https://example.com/" + id,
			"description": "", "secret": "whsec_" + id, "previous_secret": nil, "previous_secret_until": nil, "created_at": legacyT0,
			"disabled_at": nil, "disabled_reason": nil, "failing_since": nil, "types": types}}
	}
	rows := []LegacyRow{
		sub("whk_000000000000000a", nil),
		sub("whk_000000000000000b", "plant.created plant.deleted"),
		sub("whk_000000000000000c", "plant.updated"),
		{"event_sequences", map[string]any{"owner": "alice", "last": int64(3)}},
	}
	for _, e := range legacyEvents {
		rows = append(rows, LegacyRow{"events", map[string]any{"owner": "alice", "seq": e.seq,
			"id": "evt_00000000000000000000000" + string(rune('0'+e.seq)), "type": e.typ, "plant_id": e.plantID,
			"data": []byte(e.data), "created_at": e.at}})
	}
	keys := make([][2]string, 0, len(legacyBodies))
	for k := range legacyBodies {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	for _, k := range keys {
		at, plantID := legacyT0, int64(9)
		switch k[0][len(k[0])-1] {
		case '1':
			at, plantID = legacyT1, 1
		case '2':
			at, plantID = legacyT2, 1
		case '3':
			at, plantID = legacyT3, 2
		case 'a':
			plantID = 10
		}
		rows = append(rows, LegacyRow{"webhook_deliveries", map[string]any{"message_id": k[0], "subscription_id": k[1],
			"owner": "alice", "plant_id": plantID, "payload": []byte(legacyBodies[k]), "state": "pending", "attempts": int64(0),
			"next_attempt_at": at, "lease_until": nil, "created_at": at, "recovered_at": nil}})
	}
	return rows
}

// CheckLegacyRows checks b, migrated after LegacyRows were written: every
// delivery renders (eventjson.Body) the bytes stored before, every event
// the envelope of the data stored before, the subscriptions take what they
// took, and a new event fans out as the types say.
func CheckLegacyRows(t *testing.T, b plantstore.Backend) {
	t.Helper()
	ctx := t.Context()
	svc := service.New(b, service.Config{})
	tasks, err := svc.Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]string{}
	for _, task := range tasks {
		got[[2]string{task.MessageID, task.SubscriptionID}] = string(eventjson.Body(task))
	}
	if diff := cmp.Diff(legacyBodies, got); diff != "" {
		t.Fatalf("bodies after the migration (-before +after):\n%s", diff)
	}
	events, err := b.ListEvents(ctx, plantstore.EventFilter{Owner: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != len(legacyEvents) {
		t.Fatalf("%d events after the migration, want %d", len(events), len(legacyEvents))
	}
	for i, e := range events {
		le := legacyEvents[i]
		if got, want := string(eventjson.AppendPlant(nil, e)), le.data; got != want || e.Seq != le.seq || e.Type != le.typ {
			t.Errorf("event %d: seq %d %s data %s, want seq %d %s %s", i, e.Seq, e.Type, got, le.seq, le.typ, want)
		}
		want := legacyBodies[[2]string{e.MessageID(), "whk_000000000000000b"}]
		if want == "" {
			want = legacyBodies[[2]string{e.MessageID(), "whk_000000000000000c"}]
		}
		if got := string(eventjson.AppendEnvelope(nil, e)); got != want {
			t.Errorf("event %d envelope\n%s\nwant the delivered one\n%s", i, got, want)
		}
	}
	for id, want := range map[string][]string{
		"whk_000000000000000a": nil,
		"whk_000000000000000b": {plantstore.EventPlantCreated, plantstore.EventPlantDeleted},
		"whk_000000000000000c": {plantstore.EventPlantUpdated},
	} {
		sub, err := b.FindSubscription(ctx, "alice", id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, sub.Types); diff != "" {
			t.Errorf("%s: types (-want +got):\n%s", id, diff)
		}
	}
	// New events: a create goes to a and b, an update to c; seqs go on.
	if _, _, err := svc.Plants.CreatePlant(ctx, &plantstore.Plant{Owner: "alice", ID: 11, Name: "Moss"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Plants.UpdatePlant(ctx, "alice", 11, plantstore.PlantUpdate{Name: ptr("Moss 2")}, ""); err != nil {
		t.Fatal(err)
	}
	tasks, err = svc.Outbox.ClaimDeliveries(ctx, plantstore.Claim{Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]string{}
	for _, task := range tasks {
		subs[task.SubscriptionID] += task.Event.Type + " "
		if task.Event.Seq != 4 && task.Event.Seq != 5 {
			t.Errorf("new delivery of seq %d, want 4 or 5", task.Event.Seq)
		}
	}
	if diff := cmp.Diff(map[string]string{"whk_000000000000000a": "plant.created ", "whk_000000000000000b": "plant.created ",
		"whk_000000000000000c": "plant.updated "}, subs); diff != "" {
		t.Fatalf("new deliveries by subscription (-want +got):\n%s", diff)
	}
}

// LegacyAttemptError is an attempt's error as a version before the
// attempt-errors migration stored it (the send's own error, naming
// addresses and name servers), and what the migration makes of it: the
// kind of failure only, as the dispatcher writes it now.
type LegacyAttemptError struct{ Old, Want string }

// LegacyAttemptErrors are the errors that each backend's migration test
// stores under the version before the attempt-errors migration and reads
// back after it.
func LegacyAttemptErrors() []LegacyAttemptError {
	const forbidden = "forbidden address: deliveries there are refused unless the server runs with --webhook-allow-private"
	return []LegacyAttemptError{
		{`dial tcp 127.0.0.1:9901: webhook: forbidden address: 127.0.0.1: deliveries there are refused unless the server runs with --webhook-allow-private`, forbidden},
		{`dial tcp: lookup nowhere.test on 10.255.255.53:53: no such host`, "name did not resolve"},
		{`dial tcp: lookup slow.test on 10.255.255.53:53: read udp 10.0.0.2:4242->10.255.255.53:53: i/o timeout`, "name did not resolve"},
		{`dial tcp 127.0.0.1:1: connect: connection refused`, "connection refused"},
		{`read tcp 127.0.0.1:5000->127.0.0.1:9901: read: connection reset by peer`, "connection reset"},
		{`context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, "timeout"},
		{`dial tcp 10.0.0.7:443: i/o timeout`, "timeout"},
		{`tls: failed to verify certificate: x509: certificate signed by unknown authority`, "TLS certificate not valid"},
		{`remote error: tls: handshake failure`, "TLS handshake failed"},
		{`EOF`, "connection closed before an answer"},
		{`invalid url: parse "http://[::1": missing ']' in host`, "invalid url"},
		{`webhook: no valid secret to sign with`, "no valid signing secret"},
		{`something else at 10.0.0.7`, "connection failed"},
		// Today's words stay as they are.
		{"timeout", "timeout"},
		{forbidden, forbidden},
		{"connection failed", "connection failed"},
	}
}
