"""API URLs under /api/v1/ (namespace ``api``)."""

from django.urls import path, re_path

from catalogs.accounts import api as tokens
from catalogs.discovery import api as search
from catalogs.mirroring import api as mirrors
from catalogs.notifications import api as webhooks
from catalogs.publishing.api import robots, views
from catalogs.review import api as contributions
from catalogs.trust import api as revocations

app_name = "api"

_catalog = "catalogs/<slug:publisher>/<slug:catalog>/"

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
    path(
        "subscriptions/",
        webhooks.SubscriptionViewSet.as_view({"get": "list", "post": "create"}),
        name="subscription-list",
    ),
    path(
        "subscriptions/<int:pk>/",
        webhooks.SubscriptionViewSet.as_view({"delete": "destroy"}),
        name="subscription-detail",
    ),
    path(
        "notifications/",
        webhooks.NotificationViewSet.as_view({"get": "list"}),
        name="notification-list",
    ),
    path(
        "notifications/read/",
        webhooks.NotificationViewSet.as_view({"post": "read_all"}),
        name="notification-read",
    ),
    path(
        "tokens/",
        tokens.ApiTokenViewSet.as_view({"get": "list", "post": "create"}),
        name="token-list",
    ),
    path(
        "tokens/<int:pk>/",
        tokens.ApiTokenViewSet.as_view({"delete": "destroy"}),
        name="token-detail",
    ),
    path(
        "publishers/",
        views.PublisherViewSet.as_view({"get": "list", "post": "create"}),
        name="publisher-list",
    ),
    path(
        "publishers/<slug:slug>/",
        views.PublisherViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="publisher-detail",
    ),
    path(
        "publishers/<slug:publisher>/robots/",
        robots.PublisherRobotViewSet.as_view({"get": "list", "post": "create"}),
        name="publisher-robot-list",
    ),
    path(
        "publishers/<slug:publisher>/robots/<slug:name>/",
        robots.PublisherRobotViewSet.as_view({"delete": "destroy"}),
        name="publisher-robot-detail",
    ),
    path(
        "publishers/<slug:publisher>/webhooks/",
        webhooks.WebhookViewSet.as_view({"get": "list", "post": "create"}),
        name="publisher-webhook-list",
    ),
    path(
        "publishers/<slug:publisher>/webhooks/<int:pk>/",
        webhooks.WebhookViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="publisher-webhook-detail",
    ),
    path(
        "publishers/<slug:publisher>/webhooks/<int:pk>/deliveries/",
        webhooks.WebhookViewSet.as_view({"get": "deliveries"}),
        name="publisher-webhook-deliveries",
    ),
    path(
        "publishers/<slug:publisher>/keys/",
        revocations.PublisherKeyViewSet.as_view({"get": "list", "post": "create"}),
        name="publisher-key-list",
    ),
    re_path(
        r"^publishers/(?P<publisher>[-\w]+)/tuf/(?P<role>[-\w]+(?:\.private)?)\.json$",
        revocations.PublisherRoleView.as_view(),
        name="publisher-tuf-role",
    ),
    path(
        "catalogs/",
        views.CatalogViewSet.as_view({"get": "list", "post": "create"}),
        name="catalog-list",
    ),
    path(
        _catalog,
        views.CatalogViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="catalog-detail",
    ),
    path(
        _catalog + "pulls/",
        views.CatalogViewSet.as_view({"get": "pulls"}),
        name="catalog-pulls",
    ),
    path(
        _catalog + "versions/",
        views.CatalogVersionViewSet.as_view({"get": "list", "post": "create"}),
        name="catalog-version-list",
    ),
    path(
        _catalog + "versions/<int:number>/",
        views.CatalogVersionViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="catalog-version-detail",
    ),
    path(
        _catalog + "revocations/",
        revocations.RevocationViewSet.as_view({"get": "list", "post": "create"}),
        name="revocation-list",
    ),
    path("search/", search.FunctionSearchView.as_view(), name="search"),
    path(
        "functions/",
        views.FunctionVersionViewSet.as_view({"get": "list"}),
        name="function-list",
    ),
    path(
        "functions/<int:pk>/collisions/",
        revocations.FunctionCollisionsView.as_view({"get": "list"}),
        name="function-collisions",
    ),
    path(
        "functions/<int:pk>/",
        views.FunctionVersionViewSet.as_view({"get": "retrieve"}),
        name="function-detail",
    ),
    path(
        "contributions/",
        contributions.ContributionViewSet.as_view({"get": "list", "post": "create"}),
        name="contribution-list",
    ),
    path(
        "contributions/<int:pk>/",
        contributions.ContributionViewSet.as_view({"get": "retrieve"}),
        name="contribution-detail",
    ),
    path(
        "contributions/<int:pk>/resubmit/",
        contributions.ContributionViewSet.as_view({"post": "resubmit"}),
        name="contribution-resubmit",
    ),
    path(
        "contributions/<int:pk>/approve/",
        contributions.ContributionViewSet.as_view({"post": "approve"}),
        name="contribution-approve",
    ),
    path(
        "contributions/<int:pk>/reject/",
        contributions.ContributionViewSet.as_view({"post": "reject"}),
        name="contribution-reject",
    ),
    path(
        "contributions/<int:pk>/request-changes/",
        contributions.ContributionViewSet.as_view({"post": "request_changes"}),
        name="contribution-request-changes",
    ),
    path(
        "contributions/<int:pk>/comments/",
        contributions.ContributionCommentViewSet.as_view({"get": "list", "post": "create"}),
        name="contribution-comments",
    ),
    path(
        "sources/",
        mirrors.MirrorSourceViewSet.as_view({"get": "list", "post": "create"}),
        name="source-list",
    ),
    path(
        "sources/<int:pk>/",
        mirrors.MirrorSourceViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="source-detail",
    ),
    path(
        "sources/<int:pk>/sync/",
        mirrors.MirrorSourceViewSet.as_view({"post": "sync"}),
        name="source-sync",
    ),
    path(
        "sources/<int:pk>/runs/",
        mirrors.MirrorSourceViewSet.as_view({"get": "runs"}),
        name="source-runs",
    ),
    path(
        "signing-keys/",
        revocations.SigningKeyViewSet.as_view({"get": "list"}),
        name="signing-key-list",
    ),
    path(
        "runs/<int:pk>/",
        mirrors.SyncRunViewSet.as_view({"get": "retrieve"}),
        name="sync-run-detail",
    ),
]
