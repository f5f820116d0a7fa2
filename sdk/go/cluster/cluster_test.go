package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"herald.dev/sdk/go"
	"herald.dev/sdk/go/cluster"
	"herald.dev/sdk/go/heraldtest"
	"herald.dev/sdk/go/kube"
)

func TestTheStandInRunsOnTheDefaultClusterUnlessToldOtherwise(t *testing.T) {
	h := heraldtest.New(t)
	if got := cluster.Current(); got != "default" {
		t.Fatalf("Current() = %q", got)
	}
	h.SetClusters("west", "east")
	if got := strings.Join(cluster.Names(), ","); got != "east,west" {
		t.Fatalf("Names() = %q", got)
	}
	if got := cluster.Current(); got != "west" {
		t.Fatalf("Current() = %q, want the first given", got)
	}
}

func TestWithinRunsAgainstAnotherClusterAndGoesBack(t *testing.T) {
	h := heraldtest.New(t)
	h.SetClusters("east", "west")
	h.SetCluster("east")
	configMaps := herald.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	err := cluster.Within("west", func() error {
		if cluster.Current() != "west" {
			t.Fatalf("inside: %q", cluster.Current())
		}
		_, err := kube.NewDynamic(configMaps, "shop").Get("settings")
		return err
	})
	if err == nil {
		t.Fatal("nothing scripted: the get is not found, and Within returns it")
	}
	if cluster.Current() != "east" {
		t.Fatalf("after: %q", cluster.Current())
	}
	writes := h.TakeWrites()
	if len(writes) != 1 || writes[0].Cluster != "west" {
		t.Fatalf("writes: %+v", writes)
	}
	failed := errors.New("the work failed")
	if err := cluster.Within("west", func() error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("Within returned %v", err)
	}
	if cluster.Current() != "east" {
		t.Fatal("not back after a failure")
	}
}

func TestAClusterThePluginDoesNotRunOnIsRefusedBeforeTheWork(t *testing.T) {
	h := heraldtest.New(t)
	h.SetClusters("east", "west")
	err := cluster.Within("north", func() error {
		t.Fatal("ran")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "(east, west)") {
		t.Fatalf("Within(north) = %v", err)
	}
}
