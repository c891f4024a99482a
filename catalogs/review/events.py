"""Events of review, for the apps above it (see ``catalogs.events``)."""

from __future__ import annotations

from dataclasses import dataclass

from catalogs.review.models import Contribution, ReviewEvent


@dataclass(frozen=True)
class ContributionSubmitted:
    """``contribution`` was submitted, or resubmitted after changes were requested
    (``resubmitted``)."""

    contribution: Contribution
    resubmitted: bool = False


@dataclass(frozen=True)
class ContributionDecided:
    """A reviewer approved, rejected or requested changes of ``contribution`` (its ``status``
    says which)."""

    contribution: Contribution


@dataclass(frozen=True)
class ContributionCommented:
    """``comment`` (a ReviewEvent with action ``commented``) was added to the conversation of
    its contribution, by its author or a reviewer (``comment.actor``)."""

    comment: ReviewEvent
