# syntax=docker/dockerfile:1
# Plant Store container image: docker build -t plantstore .
#
# The SQLite driver (mattn/go-sqlite3) is C code: it needs cgo. With
# CGO_ENABLED=0 the binary builds but every SQLite open fails ("go-sqlite3
# requires cgo to work. This is a stub"); only a PostgreSQL --db would work.
# So the builder compiles with cgo and links statically (netgo/osusergo: no
# glibc NSS at run time), and the runtime image needs no libc at all.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath \
      -tags netgo,osusergo,sqlite_omit_load_extension \
      -ldflags '-s -w -linkmode external -extldflags "-static"' \
      -o /out/plantstore ./cmd/plantstore \
 && mkdir -p /out/data

# distroless static: CA certificates and tzdata, no shell, no package manager;
# runs as the unprivileged user nonroot (65532).
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/plantstore /usr/local/bin/plantstore
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
WORKDIR /data
# The API on every interface of the container (the binary's default,
# 127.0.0.1:8080, is unreachable from outside it).
# /metrics has a listener of its own (the API's answers it with 404): on all
# of the container's interfaces here, so that a scraper on the container
# network reaches it; publish 9464 to nothing public (compose.yaml binds it
# to the host's loopback). PLANTSTORE_METRICS_ADDR=off turns it off.
ENV PLANTSTORE_ADDR=:8080 \
    PLANTSTORE_METRICS_ADDR=:9464 \
    PLANTSTORE_DB=/data/plantstore.db
VOLUME ["/data"]
EXPOSE 8080 9464
# No curl in the image: the binary probes itself (GET /healthz, exit 0 or 1).
# Orchestrators: liveness GET /healthz, readiness GET /readyz on port 8080.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/plantstore", "healthcheck", "--url", "http://127.0.0.1:8080/healthz"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/plantstore"]
CMD ["serve"]
