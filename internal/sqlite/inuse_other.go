//go:build !linux

package sqlite

// Without open file description locks there is no in-use lock: ReplaceFile
// cannot tell whether a process has the database open (Restore's caller
// says so). lockFile still makes open and migrate take turns.

const inUseSupported = false

func holdInUse(string) (func(), error) { return func() {}, nil }

func tryExclusive(string) (func(), error) { return func() {}, nil }

func sqliteUsers(string) (bool, error) { return false, nil }
