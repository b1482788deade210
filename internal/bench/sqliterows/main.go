// Command sqliterows measures what SQLite itself commits, the physical
// reference of a batch create: rows of a plain table keyed like plants
// (owner, id; WITHOUT ROWID, no other index, no trigger), inserted in
// transactions of -batch rows with one multi-row INSERT per 100 rows, WAL
// with synchronous=FULL (every commit fsynced, as --durability full; -sync
// NORMAL is --durability relaxed). It prints the rows per second, the
// median time of a transaction (txn_p50_ms) and the process's CPU time per
// transaction (txn_cpu_us). With -batch 1 it is the reference of a lone
// create: what SQLite itself needs for a one-row commit on this disk.
//
//	sqliterows [-rows 200000] [-batch 1000] [-sync FULL] [-dir DIR]
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/plantstore/plantstore/internal/bench/proccpu"
)

func main() {
	rows := flag.Int("rows", 200000, "rows to insert")
	batch := flag.Int("batch", 1000, "rows a transaction")
	dir := flag.String("dir", os.TempDir(), "directory of the database (the disk to measure)")
	sync := flag.String("sync", "FULL", "PRAGMA synchronous: FULL (every commit fsynced) or NORMAL")
	flag.Parse()
	if *sync != "FULL" && *sync != "NORMAL" {
		fmt.Fprintln(os.Stderr, "sqliterows: -sync must be FULL or NORMAL")
		os.Exit(2)
	}
	if err := run(*rows, *batch, *sync, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "sqliterows:", err)
		os.Exit(1)
	}
}

// maxPerStatement is how many rows one INSERT carries at most.
const maxPerStatement = 100

func run(rows, batch int, sync, dir string) error {
	if batch < 1 {
		return fmt.Errorf("-batch must be at least 1")
	}
	perStatement := min(batch, maxPerStatement)
	tmp, err := os.MkdirTemp(dir, "sqliterows-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(tmp, "rows.db")+"?_journal_mode=WAL&_synchronous="+sync+"&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE plants (owner TEXT NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, tag TEXT,
		created_at INTEGER NOT NULL, PRIMARY KEY (owner, id)) WITHOUT ROWID`); err != nil {
		return err
	}
	ins, err := db.Prepare(`INSERT INTO plants (owner, id, name, tag, created_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?,?,?,?,?),", perStatement), ","))
	if err != nil {
		return err
	}
	defer ins.Close()
	args := make([]any, 0, 5*perStatement)
	cpu0, err := proccpu.Used()
	if err != nil {
		return err
	}
	var txns []time.Duration
	start := time.Now()
	id := 0
	for id < rows {
		began := time.Now()
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		for n := 0; n < batch && id < rows; n += perStatement {
			args = args[:0]
			for range perStatement {
				id++
				args = append(args, "bench", id, fmt.Sprint("plant ", id), "bench", time.Now().UnixNano())
			}
			if _, err := tx.Stmt(ins).Exec(args...); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		txns = append(txns, time.Since(began))
	}
	took := time.Since(start)
	cpu1, err := proccpu.Used()
	if err != nil {
		return err
	}
	slices.Sort(txns)
	fmt.Printf("rows=%d batch=%d sync=%s seconds=%.3f rows_per_s=%.0f txn_p50_ms=%.3f txn_cpu_us=%.1f\n", id, batch, sync,
		took.Seconds(), float64(id)/took.Seconds(), float64(txns[len(txns)/2].Microseconds())/1000,
		float64((cpu1-cpu0).Nanoseconds())/1000/float64(len(txns)))
	return nil
}
