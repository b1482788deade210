package postgres_test

import "github.com/plantstore/plantstore"

// insert3 gives an InsertPlant result as the values the tests check.
func insert3(res plantstore.InsertResult, err error) (existing *plantstore.Plant, deliveries int, err2 error) {
	return res.Existing, res.Deliveries, err
}

// errOnly returns the error of a write that returns a result too.
func errOnly(_ plantstore.WriteResult, err error) error { return err }
