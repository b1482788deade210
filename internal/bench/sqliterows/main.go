// Command sqliterows measures what SQLite itself commits, the physical
// reference of a batch create: rows of a plain table keyed like plants
// (owner, id; WITHOUT ROWID, no other index, no trigger), inserted in
// transactions of -batch rows with one multi-row INSERT per 100 rows, WAL
// with synchronous=FULL (every commit fsynced, as --durability full). It
// prints the rows per second.
//
//	sqliterows [-rows 200000] [-batch 1000] [-dir DIR]
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	rows := flag.Int("rows", 200000, "rows to insert")
	batch := flag.Int("batch", 1000, "rows a transaction")
	dir := flag.String("dir", os.TempDir(), "directory of the database (the disk to measure)")
	flag.Parse()
	if err := run(*rows, *batch, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "sqliterows:", err)
		os.Exit(1)
	}
}

// perStatement is how many rows one INSERT carries.
const perStatement = 100

func run(rows, batch int, dir string) error {
	tmp, err := os.MkdirTemp(dir, "sqliterows-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(tmp, "rows.db")+"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
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
	start := time.Now()
	id := 0
	for id < rows {
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
	}
	took := time.Since(start)
	fmt.Printf("rows=%d batch=%d seconds=%.3f rows_per_s=%.0f\n", id, batch, took.Seconds(), float64(id)/took.Seconds())
	return nil
}
