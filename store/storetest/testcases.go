package storetest

import (
	"testing"

	"github.com/scenario-server/scenario-server/store"
)

// testTestCases saves, replaces, lists and deletes a scenario's test cases.
func testTestCases(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	if list, err := s.ListTestCases(ctx, "fraud"); err != nil || list != nil {
		t.Fatalf("ListTestCases of an empty store = %v, %v; want nil, nil", list, err)
	}
	must(s.PutTestCase(ctx, store.TestCase{Scenario: "fraud", Name: "small", Records: `{"a":1}`, Expected: `{"out":[1]}`, Author: "anna"}))(t)
	must(s.PutTestCase(ctx, store.TestCase{Scenario: "fraud", Name: "big", Records: `{"a":2}`, Expected: `{"out":[2]}`, Author: "anna"}))(t)
	must(s.PutTestCase(ctx, store.TestCase{Scenario: "alerts", Name: "small", Records: `{"a":3}`, Expected: `{}`, Author: "ben"}))(t)
	// The same name again replaces it.
	re := must(s.PutTestCase(ctx, store.TestCase{Scenario: "fraud", Name: "small", Records: `{"a":9}`, Expected: `{"out":[9]}`, Author: "ben"}))(t)
	if re.UpdatedAt.IsZero() {
		t.Error("UpdatedAt not set")
	}
	list := must(s.ListTestCases(ctx, "fraud"))(t)
	if len(list) != 2 || list[0].Name != "big" || list[1].Name != "small" || list[1].Records != `{"a":9}` ||
		list[1].Expected != `{"out":[9]}` || list[1].Author != "ben" || list[1].Scenario != "fraud" {
		t.Fatalf("ListTestCases(fraud) = %+v; want big, then small replaced by ben", list)
	}
	wantErr(t, "deleting a missing test case", s.DeleteTestCase(ctx, "fraud", "nope"), store.ErrNotFound)
	if err := s.DeleteTestCase(ctx, "fraud", "big"); err != nil {
		t.Fatal(err)
	}
	if list := must(s.ListTestCases(ctx, "fraud"))(t); len(list) != 1 || list[0].Name != "small" {
		t.Errorf("after deleting big: %+v", list)
	}
	if list := must(s.ListTestCases(ctx, "alerts"))(t); len(list) != 1 || list[0].Records != `{"a":3}` {
		t.Errorf("alerts: %+v", list)
	}
}
