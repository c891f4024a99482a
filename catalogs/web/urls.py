"""Web UI URLs (mounted at the site root)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from catalogs.discovery import pages as search_pages
from catalogs.distribution import pages as package_pages
from catalogs.mirroring import pages as mirror_pages
from catalogs.notifications import pages as inbox_pages
from catalogs.publishing import pages as publisher_pages
from catalogs.trust import pages as revocation_pages
from catalogs.web import accounts, views

app_name = "web"

urlpatterns = [
    path("", search_pages.search_page, name="search"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(template_name="catalogs/registration/login.html"),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("accounts/email/", accounts.email_status, name="email"),
    path("accounts/email/verify/<str:token>/", accounts.email_verify, name="email-verify"),
    path("accounts/password/reset/", accounts.password_reset, name="password-reset"),
    path(
        "accounts/password/reset/sent/",
        accounts.password_reset_done,
        name="password-reset-done",
    ),
    path(
        "accounts/password/reset/<uidb64>/<token>/",
        accounts.password_reset_confirm,
        name="password-reset-confirm",
    ),
    path(
        "accounts/password/reset/done/",
        accounts.password_reset_complete,
        name="password-reset-complete",
    ),
    path("accounts/publishers/", accounts.publisher_list_mine, name="my-publishers"),
    path("install/", accounts.install_krm, name="install"),
    path("accounts/tokens/", views.api_tokens, name="tokens"),
    path("inbox/", inbox_pages.inbox_page, name="inbox"),
    path("accounts/invitations/", publisher_pages.invitation_list, name="invitations"),
    path(
        "accounts/invitations/<int:pk>/",
        publisher_pages.invitation_decide,
        name="invitation-decide",
    ),
    path("catalogs/new/", views.catalog_create, name="catalog-create"),
    path("publishers/new/", publisher_pages.publisher_create, name="publisher-create"),
    path("publishers/<slug:slug>/", publisher_pages.publisher_detail, name="publisher"),
    path("publishers/<slug:slug>/webhooks/", inbox_pages.webhook_list_page, name="webhooks"),
    path(
        "publishers/<slug:slug>/owners/",
        publisher_pages.publisher_owner_add,
        name="publisher-owner-add",
    ),
    path(
        "publishers/<slug:slug>/verification/",
        publisher_pages.publisher_verification_request,
        name="publisher-verification-request",
    ),
    path("verification/", publisher_pages.verification_queue, name="verification-queue"),
    path(
        "verification/<int:pk>/",
        publisher_pages.verification_decide,
        name="verification-decide",
    ),
    path("catalogs/<slug:publisher>/<slug:catalog>/", views.catalog_detail, name="catalog"),
    path(
        "catalogs/<slug:publisher>/<slug:catalog>/revocations/",
        revocation_pages.catalog_revocations,
        name="catalog-revocations",
    ),
    path(
        "catalogs/<slug:publisher>/<slug:catalog>/packages/",
        package_pages.catalog_packages,
        name="catalog-packages",
    ),
    path(
        "catalogs/<slug:publisher>/<slug:catalog>/publish/",
        views.catalog_publish,
        name="catalog-publish",
    ),
    path(
        "catalogs/<slug:publisher>/<slug:catalog>/functions/<str:group>/<str:kind>/",
        views.function_detail,
        name="function",
    ),
    path("contribute/", views.contribution_create, name="contribute"),
    path("contributions/", views.contribution_list_mine, name="contributions"),
    path("contributions/<int:pk>/", views.contribution_detail, name="contribution"),
    path(
        "contributions/<int:pk>/comments/",
        views.contribution_comment,
        name="contribution-comment",
    ),
    path("contributions/<int:pk>/edit/", views.contribution_edit, name="contribution-edit"),
    path("review/", views.review_queue, name="review-queue"),
    path("review/log/", views.review_log, name="review-log"),
    path("review/<int:pk>/", views.review_detail, name="review-detail"),
    path("review/<int:pk>/approve/", views.review_approve, name="review-approve"),
    path("review/<int:pk>/reject/", views.review_reject, name="review-reject"),
    path(
        "review/<int:pk>/request-changes/",
        views.review_request_changes,
        name="review-request-changes",
    ),
    path("review/<int:pk>/comment/", views.review_comment, name="review-comment"),
    path("review/<int:pk>/trials/", views.review_trials_run, name="review-trials"),
    path("mirrors/", mirror_pages.mirror_list, name="mirrors"),
    path("mirrors/new/", mirror_pages.mirror_create, name="mirror-create"),
    path("mirrors/<int:pk>/", mirror_pages.mirror_detail, name="mirror"),
    path("mirrors/<int:pk>/edit/", mirror_pages.mirror_edit, name="mirror-edit"),
    path("mirrors/<int:pk>/sync/", mirror_pages.mirror_sync, name="mirror-sync"),
]
