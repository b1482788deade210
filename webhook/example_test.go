package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/webhook"
)

// A receiver checks each delivery with Verify before trusting it.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // as shown by POST /webhooks

	receive := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		// Deliveries come at least once: skip a webhook-id already handled.
		fmt.Printf("plant %s from delivery %s\n", body, r.Header.Get("webhook-id"))
		w.WriteHeader(http.StatusNoContent)
	}

	// What the plant store sends.
	body := `{"id":7,"name":"Fern"}`
	now := time.Now()
	sig, _ := webhook.Sign("msg_0123", now, []byte(body), []string{secret})
	r := httptest.NewRequest(http.MethodPost, "/hooks/plants", strings.NewReader(body))
	r.Header.Set("webhook-id", "msg_0123")
	r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	r.Header.Set("webhook-signature", sig)
	w := httptest.NewRecorder()
	receive(w, r)
	fmt.Println(w.Code)

	// A forged one.
	r = httptest.NewRequest(http.MethodPost, "/hooks/plants", strings.NewReader(`{"id":8,"name":"Weed"}`))
	r.Header.Set("webhook-id", "msg_0123")
	r.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	r.Header.Set("webhook-signature", sig)
	w = httptest.NewRecorder()
	receive(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// plant {"id":7,"name":"Fern"} from delivery msg_0123
	// 204
	// 401 webhook: verify: no matching signature
}
