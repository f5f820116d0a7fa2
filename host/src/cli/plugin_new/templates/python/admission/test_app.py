"""The plugin's decisions, run against the SDK's stand-in host."""

from herald_sdk import testing

from app import Plugin


def pod(image, init_image=None):
    spec = {"containers": [{"name": "app", "image": image}]}
    if init_image is not None:
        spec["initContainers"] = [{"name": "setup", "image": init_image}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop"}, "spec": spec}


def test_refuses_unpinned_images_and_allows_pinned_ones():
    plugin = Plugin()
    for image in ["shop/web:1.4.2", "registry:5000/web:2", "web@sha256:0123abcd"]:
        verdict = plugin.validate(testing.creating(pod(image)))
        assert verdict.allowed, f"{image}: {verdict.message}"
    for image in ["shop/web", "shop/web:latest", "registry:5000/web"]:
        verdict = plugin.validate(testing.creating(pod(image)))
        assert not verdict.allowed, f"{image} was allowed"
        assert verdict.message == f"images must be pinned to a tag or digest, not latest: {image}"


def test_checks_init_containers_and_updates():
    plugin = Plugin()
    verdict = plugin.validate(testing.creating(pod("web:1", init_image="busybox")))
    assert verdict.message == "images must be pinned to a tag or digest, not latest: busybox"
    verdict = plugin.validate(testing.updating(pod("web:1"), pod("web:latest")))
    assert not verdict.allowed, "an update to :latest was allowed"
