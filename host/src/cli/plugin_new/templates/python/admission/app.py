"""{{name}}: a Herald admission plugin that refuses Pods whose images are
not pinned (no tag, or ``:latest``), at the door, before they exist."""

import herald_sdk
from herald_sdk import Handler, Manifest
from herald_sdk.admission import AdmissionReview, AdmissionRule, Verdict, Webhook
from herald_sdk.kinds import Pod


def pinned(image: str) -> bool:
    """Whether ``image`` names a tag other than ``latest``, or a digest."""
    if "@" in image:
        return True
    # The tag follows the last ':' after the last '/' (a registry's port is not a tag).
    _, colon, tag = image.rpartition("/")[2].rpartition(":")
    return bool(colon) and tag != "latest"


class Plugin(Handler):
    """Validates Pods as they are created or updated."""

    @classmethod
    def manifest(cls) -> Manifest:
        return Manifest("{{name}}", "0.1.0").validating(Webhook().rule(AdmissionRule.to(Pod).create().update()))

    def validate(self, review: AdmissionReview) -> Verdict:
        unpinned = [image for image in review.object_as(Pod).images if not pinned(image)]
        if unpinned:
            return Verdict.deny(f"images must be pinned to a tag or digest, not latest: {', '.join(unpinned)}")
        return Verdict.allow()


herald_sdk.export_plugin(Plugin)
