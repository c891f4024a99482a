"""API of contributions (KEP-2906 story 6): submit, list, see, resubmit, approve, request
changes, reject, and the conversation (comments).

Thin like the web pages in catalogs/web/views.py, and calling the same services and checks:
every rule (who may see, edit or review what, and when) lives in catalogs.review.services or in
the web view helper reused here, so the API and the web UI cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from catalogs.accounts.auth import TokenHasScope
from catalogs.accounts.models import ApiToken, TokenScope
from catalogs.api.cache import cached_list
from catalogs.api.parsers import CatalogJSONParser
from catalogs.exceptions import InvalidInputError
from catalogs.oversized import OversizedDocument
from catalogs.publishing import selectors
from catalogs.publishing.api.serializers import absolute_url, catalog_version_url, fast_reverse
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ContributionStatus, ReviewEvent

# The web UI's own visibility check (author or reviewer), reused so both enforce the same rule.
from orchestrator.catalog import MAX_DEPTH, dump_canonical


def contribution_url(request, contribution: Contribution) -> str:
    """Absolute URL of a contribution in the API."""
    return absolute_url(request, fast_reverse("api:contribution-detail", pk=contribution.pk))


def _depth(value: Any) -> int:
    """How deeply ``value`` nests mappings and lists (iterative: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "description": "The definition as YAML text."},
            {"type": "object", "additionalProperties": True, "description": "As a JSON object."},
        ]
    }
)
class DefinitionField(serializers.Field):
    """A KRMFunctionDefinition (or just its spec): YAML text, or the document as a JSON object."""

    default_error_messages = {
        "invalid": "Give the definition as YAML text or as a JSON object.",
        "too_deep": f"The definition is nested deeper than {MAX_DEPTH} levels.",
    }

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str):
            return data
        if not isinstance(data, dict):
            self.fail("invalid")
        if _depth(data) > MAX_DEPTH:
            self.fail("too_deep")
        # Stored as YAML, like a definition built from the web form's fields, for reviewers.
        return dump_canonical(data)

    def to_representation(self, value: str) -> str:
        return value


class ContributionCreateSerializer(serializers.Serializer):
    """Input of a contribution: the target catalog (publisher and name) and the definition."""

    publisher = serializers.SlugField(max_length=100)
    catalog = serializers.SlugField(max_length=100)
    definition = DefinitionField()


class ContributionResubmitSerializer(serializers.Serializer):
    """Input of a resubmission: the edited definition."""

    definition = DefinitionField()


class ContributionApproveSerializer(serializers.Serializer):
    """Input of an approval: an optional comment, which the author sees."""

    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ContributionRejectSerializer(serializers.Serializer):
    """Input of a rejection or of a request for changes; the service requires the reason to be
    non-blank."""

    reason = serializers.CharField(required=False, allow_blank=True, default="")


class ContributionCommentCreateSerializer(serializers.Serializer):
    """Input of a comment; the service requires some text."""

    body = serializers.CharField(required=False, allow_blank=True, default="")


class ContributionCommentSerializer(serializers.ModelSerializer):
    """One message of a contribution's conversation."""

    author = serializers.SerializerMethodField()
    body = serializers.CharField(source="reason", read_only=True)

    class Meta:
        model = ReviewEvent
        fields = ["id", "author", "body", "revision", "created_at"]
        read_only_fields = fields

    def get_author(self, obj: ReviewEvent) -> str | None:
        return obj.actor.username if obj.actor else None


class RevisionDiffSerializer(serializers.Serializer):
    """The definition's unified diff between the previous revision and the current one."""

    previous = serializers.IntegerField()
    current = serializers.IntegerField()
    recorded = serializers.BooleanField(
        help_text="False when the previous revision's definition was not kept."
    )
    lines = serializers.ListField(child=serializers.CharField())


class QueryFlagField(serializers.BooleanField):
    """A boolean query parameter: ``?mine=`` (empty) is refused like any value that is not a
    boolean, as the schema says; DRF would otherwise read an empty value as "not given"."""

    def get_value(self, dictionary: Any) -> Any:
        if dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)


class ContributionQuerySerializer(serializers.Serializer):
    """Filters of the contribution list."""

    status = serializers.ChoiceField(choices=ContributionStatus.choices, required=False)
    catalog = serializers.RegexField(
        r"^[-\w]+/[-\w]+$",
        required=False,
        help_text="The target catalog as <publisher>/<name>.",
        error_messages={"invalid": "Give the catalog as <publisher>/<name>."},
    )
    mine = QueryFlagField(
        required=False, default=False, help_text="Only my contributions (reviewers see all)."
    )


class ReviewEventSerializer(serializers.ModelSerializer):
    """One entry of a contribution's audit log."""

    actor: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    catalog_version = serializers.SerializerMethodField()

    class Meta:
        model = ReviewEvent
        fields = ["action", "actor", "reason", "revision", "catalog_version", "created_at"]
        read_only_fields = fields

    def get_catalog_version(self, obj: ReviewEvent) -> int | None:
        return obj.catalog_version.number if obj.catalog_version else None


class ContributionSerializer(serializers.ModelSerializer):
    """A contribution: target, function, review status and, once approved, the version."""

    url = serializers.SerializerMethodField()
    publisher = serializers.SerializerMethodField()
    catalog = serializers.SerializerMethodField()
    author: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    reviewer: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )
    published_version = serializers.SerializerMethodField()
    published_version_url = serializers.SerializerMethodField()

    class Meta:
        model = Contribution
        fields = [
            "id",
            "url",
            "publisher",
            "catalog",
            "group",
            "kind",
            "status",
            "revision",
            "author",
            "reviewer",
            "reviewed_at",
            "reason",
            "published_version",
            "published_version_url",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_url(self, obj: Contribution) -> str:
        return contribution_url(self.context.get("request"), obj)

    def get_publisher(self, obj: Contribution) -> str:
        return obj.catalog.publisher.slug

    def get_catalog(self, obj: Contribution) -> str:
        return obj.catalog.name

    def get_published_version(self, obj: Contribution) -> int | None:
        return obj.published_version.number if obj.published_version else None

    def get_published_version_url(self, obj: Contribution) -> str | None:
        if not obj.published_version:
            return None
        return catalog_version_url(self.context.get("request"), obj.published_version)


class ContributionDetailSerializer(ContributionSerializer):
    """A contribution with its definition as submitted and its audit log."""

    content = serializers.CharField(read_only=True)
    events = serializers.SerializerMethodField()
    revision_diff = serializers.SerializerMethodField()

    class Meta(ContributionSerializer.Meta):
        fields = [*ContributionSerializer.Meta.fields, "content", "events", "revision_diff"]
        read_only_fields = fields

    @extend_schema_field(RevisionDiffSerializer(allow_null=True))
    def get_revision_diff(self, obj: Contribution) -> dict[str, Any] | None:
        diff = contributions.contribution_revision_diff(contribution=obj)
        if diff is None:
            return None
        return {
            "previous": diff.previous,
            "current": diff.current,
            "recorded": diff.recorded,
            "lines": diff.lines,
        }

    @extend_schema_field(ReviewEventSerializer(many=True))
    def get_events(self, obj: Contribution) -> list[dict[str, Any]]:
        events = contributions.review_event_list(contribution=obj).select_related("catalog_version")
        # many=True makes a ListSerializer (.data is a ReturnList); the stubs give the child's type.
        return ReviewEventSerializer(events, many=True, context=self.context).data  # type: ignore[return-value]


def _validated(serializer_class: type, data: object) -> dict:
    """Validate ``data`` with ``serializer_class`` (400 on errors) and return the clean values."""
    if isinstance(data, OversizedDocument):
        # CatalogJSONParser kept only the size of a body over twice the document limit.
        limit = 2 * settings.CATALOG_MAX_BYTES
        raise InvalidInputError(
            f"The request body is {data.size} bytes, over the limit of {limit} bytes."
        )
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ContributionViewSet(viewsets.GenericViewSet):
    """Contributions: anyone signed in contributes; reviewers approve or reject others' ones."""

    serializer_class = ContributionSerializer
    permission_classes = [IsAuthenticated, TokenHasScope]
    # Decisions need the review scope; submitting and resubmitting, like every write, publish.
    token_scopes = {"approve": "review", "reject": "review", "request_changes": "review"}
    parser_classes = [CatalogJSONParser]

    def get_queryset(self):
        return contributions.contribution_list()

    def _detail(self, contribution: Contribution, code: int = status.HTTP_200_OK) -> Response:
        context = self.get_serializer_context()
        body = ContributionDetailSerializer(contribution, context=context).data
        headers = {"Location": body["url"]} if code == status.HTTP_201_CREATED else None
        return Response(body, status=code, headers=headers)

    @extend_schema(parameters=[ContributionQuerySerializer])
    @cached_list("user")
    def list(self, request: Request) -> Response:
        """Reviewers see every contribution (the review queue); others see their own."""
        query = ContributionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = dict(query.validated_data)
        if filters.get("catalog"):
            # A well-formed name of no catalog is 404, like the catalog's own URL.
            publisher, _, name = filters["catalog"].partition("/")
            filters["catalog"] = selectors.catalog_get(
                publisher_slug=publisher, name=name, viewer=request.user
            )
        mine = filters["mine"] or not contributions.user_can_review(user=request.user)
        if mine:
            assert selectors.signed_in(request.user)  # IsAuthenticated
            items = contributions.contribution_list(
                status=filters.get("status"), catalog=filters.get("catalog"), author=request.user
            )
        else:
            # The review queue: everything for reviewers, their publishers' for owners.
            items = contributions.contribution_list_reviewable(
                user=request.user, status=filters.get("status"), catalog=filters.get("catalog")
            )
        page = self.paginate_queryset(items)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(responses=ContributionDetailSerializer)
    def retrieve(self, request: Request, pk: int) -> Response:
        """Its author and reviewers see a contribution."""
        return self._detail(contributions.contribution_get_visible(pk=int(pk), user=request.user))

    @extend_schema(
        request=ContributionCreateSerializer, responses={201: ContributionDetailSerializer}
    )
    def create(self, request: Request) -> Response:
        """Propose a function definition for a catalog; it waits for review."""
        data = _validated(ContributionCreateSerializer, request.data)
        catalog = selectors.catalog_get(
            publisher_slug=data["publisher"], name=data["catalog"], viewer=request.user
        )
        contribution = contributions.contribution_submit(
            catalog=catalog, content=data["definition"], actor=request.user
        )
        return self._detail(contribution, status.HTTP_201_CREATED)

    @extend_schema(request=ContributionResubmitSerializer, responses=ContributionDetailSerializer)
    def resubmit(self, request: Request, pk: int) -> Response:
        """The author sends a new revision back to review after a reviewer requested changes."""
        contribution = contributions.contribution_get_visible(pk=int(pk), user=request.user)
        # Permission before the body: a non-author learns nothing from validation errors.
        contributions.contribution_check_may_edit(contribution=contribution, actor=request.user)
        data = _validated(ContributionResubmitSerializer, request.data)
        contribution = contributions.contribution_resubmit(
            contribution=contribution, content=data["definition"], actor=request.user
        )
        return self._detail(contribution)

    @extend_schema(request=ContributionApproveSerializer, responses=ContributionDetailSerializer)
    def approve(self, request: Request, pk: int) -> Response:
        """A reviewer (or an owner of the target publisher) approves, with an optional comment:
        a new version of the catalog, with the function, is published."""
        contribution = contributions.contribution_get_reviewable(pk=int(pk), user=request.user)
        contributions.contribution_check_may_review(contribution=contribution, actor=request.user)
        data = _validated(ContributionApproveSerializer, request.data)
        contribution = contributions.contribution_approve(
            contribution=contribution, actor=request.user, comment=data["comment"]
        )
        return self._detail(contribution)

    @extend_schema(request=ContributionRejectSerializer, responses=ContributionDetailSerializer)
    def reject(self, request: Request, pk: int) -> Response:
        """A reviewer rejects with a required reason, which the author sees; final."""
        contribution = contributions.contribution_get_reviewable(pk=int(pk), user=request.user)
        contributions.contribution_check_may_review(contribution=contribution, actor=request.user)
        data = _validated(ContributionRejectSerializer, request.data)
        contribution = contributions.contribution_reject(
            contribution=contribution, actor=request.user, reason=data["reason"]
        )
        return self._detail(contribution)

    @extend_schema(request=ContributionRejectSerializer, responses=ContributionDetailSerializer)
    def request_changes(self, request: Request, pk: int) -> Response:
        """A reviewer asks for changes with a required reason; the author resubmits a new
        revision, which is pending again."""
        contribution = contributions.contribution_get_reviewable(pk=int(pk), user=request.user)
        contributions.contribution_check_may_review(contribution=contribution, actor=request.user)
        data = _validated(ContributionRejectSerializer, request.data)
        contribution = contributions.contribution_request_changes(
            contribution=contribution, actor=request.user, reason=data["reason"]
        )
        return self._detail(contribution)


class CommentTokenScope(TokenHasScope):
    """Reading a conversation needs ``read``; writing in it ``publish`` (authors) or ``review``
    (reviewers): either will do, unlike the one scope TokenHasScope asks of other writes."""

    def has_permission(self, request: Request, view: object) -> bool:
        token = request.auth
        if request.method in SAFE_METHODS or not isinstance(token, ApiToken):
            return super().has_permission(request, view)
        if token.has_scope(TokenScope.PUBLISH.value) or token.has_scope(TokenScope.REVIEW.value):
            return True
        raise PermissionDenied(
            f"The token {token.name!r} lacks the 'publish' or 'review' scope a comment needs "
            f"(it has: {', '.join(token.scopes) or 'none'})."
        )


class ContributionCommentViewSet(viewsets.GenericViewSet):
    """The conversation of a contribution: its author and its reviewers read and write it."""

    serializer_class = ContributionCommentSerializer
    permission_classes = [IsAuthenticated, CommentTokenScope]
    # The path's id names the contribution; the schema's parameter type comes from here.
    queryset = Contribution.objects.none()
    parser_classes = [CatalogJSONParser]
    pagination_class = None

    @extend_schema(responses=ContributionCommentSerializer(many=True))
    def list(self, request: Request, pk: int) -> Response:
        """The comments, oldest first."""
        contribution = contributions.contribution_get_visible(pk=int(pk), user=request.user)
        comments = contributions.contribution_comment_list(contribution=contribution)
        return Response(self.get_serializer(comments, many=True).data)

    @extend_schema(
        request=ContributionCommentCreateSerializer,
        responses={201: ContributionCommentSerializer},
    )
    def create(self, request: Request, pk: int) -> Response:
        """Add a comment (the author, or a reviewer of the catalog)."""
        contribution = contributions.contribution_get_visible(pk=int(pk), user=request.user)
        contributions.contribution_check_may_comment(contribution=contribution, actor=request.user)
        data = _validated(ContributionCommentCreateSerializer, request.data)
        comment = contributions.contribution_comment_add(
            contribution=contribution, author=request.user, body=data["body"]
        )
        return Response(self.get_serializer(comment).data, status=status.HTTP_201_CREATED)
