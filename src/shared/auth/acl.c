/* SPDX-License-Identifier: Apache-2.0 */
/* ACLs: canned ACLs, x-amz-grant-* headers, the AccessControlPolicy XML (parsed on the shared
 * XML walker, s3/xml.c) and its reply form, the storage text, and the grant check.
 *
 * One grant entry per grantee holds all its permission bits; the XML form writes one Grant per
 * permission (FULL_CONTROL when it holds them all), as S3 does. */
#include "auth/authz.h"
#include "s3/xml.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void auth_principal_anon(auth_principal_t *p)
{
    memset(p, 0, sizeof *p);
    p->kind = AUTH_PRINCIPAL_ANON;
}

static void set_msg(char *msg, size_t msglen, const char *fmt, const char *arg)
{
    if (msg && msglen)
        snprintf(msg, msglen, fmt, arg ? arg : "");
}

/* Adds perm to grantee (kind, id), merging with an entry it already has. -1 when full. */
static int acl_add(auth_acl_t *acl, auth_grantee_kind_t kind, const char *id, unsigned perm)
{
    if (!id)
        id = "";
    for (size_t i = 0; i < acl->n; i++)
        if (acl->g[i].kind == kind && strcmp(acl->g[i].id, id) == 0) {
            acl->g[i].perm |= perm;
            return 0;
        }
    if (acl->n == AUTH_ACL_MAX_GRANTS)
        return -1;
    auth_grant_t *g = &acl->g[acl->n++];
    g->kind = kind;
    snprintf(g->id, sizeof g->id, "%s", id);
    g->perm = perm;
    return 0;
}

static void acl_reset(auth_acl_t *acl, const char *owner)
{
    snprintf(acl->owner, sizeof acl->owner, "%s", owner ? owner : "");
    acl->n = 0;
}

void auth_acl_private(auth_acl_t *acl, const char *owner)
{
    acl_reset(acl, owner);
    acl_add(acl, AUTH_GRANTEE_USER, acl->owner, AUTH_PERM_FULL_CONTROL);
}

s3_err_t auth_acl_canned(auth_acl_t *acl, const char *name, const char *owner,
                         const char *bucket_owner, char *msg, size_t msglen)
{
    auth_acl_private(acl, owner);
    if (!name || strcmp(name, "private") == 0)
        return S3_OK;
    if (strcmp(name, "public-read") == 0) {
        acl_add(acl, AUTH_GRANTEE_ALL_USERS, NULL, AUTH_PERM_READ);
    } else if (strcmp(name, "public-read-write") == 0) {
        acl_add(acl, AUTH_GRANTEE_ALL_USERS, NULL, AUTH_PERM_READ | AUTH_PERM_WRITE);
    } else if (strcmp(name, "authenticated-read") == 0) {
        acl_add(acl, AUTH_GRANTEE_AUTH_USERS, NULL, AUTH_PERM_READ);
    } else if (strcmp(name, "bucket-owner-read") == 0) {
        if (bucket_owner && *bucket_owner)
            acl_add(acl, AUTH_GRANTEE_USER, bucket_owner, AUTH_PERM_READ);
    } else if (strcmp(name, "bucket-owner-full-control") == 0) {
        if (bucket_owner && *bucket_owner)
            acl_add(acl, AUTH_GRANTEE_USER, bucket_owner, AUTH_PERM_FULL_CONTROL);
    } else if (strcmp(name, "log-delivery-write") == 0) {
        acl_add(acl, AUTH_GRANTEE_LOG_DELIVERY, NULL, AUTH_PERM_WRITE | AUTH_PERM_READ_ACP);
    } else {
        set_msg(msg, msglen,
                "x-amz-acl \"%s\" is not a canned ACL (private, public-read, public-read-write, "
                "authenticated-read, bucket-owner-read, bucket-owner-full-control, "
                "log-delivery-write)",
                name);
        return S3_ERR_INVALID_ARGUMENT;
    }
    return S3_OK;
}

static const struct {
    unsigned perm;
    const char *name, *header;
} g_perms[] = {
    {AUTH_PERM_FULL_CONTROL, "FULL_CONTROL", "x-amz-grant-full-control"},
    {AUTH_PERM_READ, "READ", "x-amz-grant-read"},
    {AUTH_PERM_WRITE, "WRITE", "x-amz-grant-write"},
    {AUTH_PERM_READ_ACP, "READ_ACP", "x-amz-grant-read-acp"},
    {AUTH_PERM_WRITE_ACP, "WRITE_ACP", "x-amz-grant-write-acp"},
};
#define N_PERMS (sizeof g_perms / sizeof g_perms[0])

const char *auth_acl_grant_header_name(unsigned perm)
{
    for (size_t i = 0; i < N_PERMS; i++)
        if (g_perms[i].perm == perm)
            return g_perms[i].header;
    return NULL;
}

/* A canonical id as wharf makes them: 1..64 hex digits. */
static bool canonical_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A group URI as its grantee kind; -1 when unknown. */
static int group_kind(const char *s, size_t n)
{
    if (n == strlen(AUTH_GROUP_ALL_USERS) && memcmp(s, AUTH_GROUP_ALL_USERS, n) == 0)
        return AUTH_GRANTEE_ALL_USERS;
    if (n == strlen(AUTH_GROUP_AUTH_USERS) && memcmp(s, AUTH_GROUP_AUTH_USERS, n) == 0)
        return AUTH_GRANTEE_AUTH_USERS;
    if (n == strlen(AUTH_GROUP_LOG_DELIVERY) && memcmp(s, AUTH_GROUP_LOG_DELIVERY, n) == 0)
        return AUTH_GRANTEE_LOG_DELIVERY;
    return -1;
}

s3_err_t auth_acl_grant_header(auth_acl_t *acl, unsigned perm, const char *value, char *msg,
                               size_t msglen)
{
    const char *hname = auth_acl_grant_header_name(perm);
    if (!hname || !value) {
        set_msg(msg, msglen, "unknown grant permission%s", "");
        return S3_ERR_INVALID_ARGUMENT;
    }
    const char *p = value;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *eq = strchr(p, '=');
        if (!eq) {
            set_msg(msg, msglen, "%s: expected type=\"value\" (id, uri or emailAddress)", hname);
            return S3_ERR_INVALID_ARGUMENT;
        }
        size_t tl = (size_t)(eq - p);
        while (tl && (p[tl - 1] == ' ' || p[tl - 1] == '\t'))
            tl--;
        const char *v = eq + 1, *ve;
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v == '"') {
            v++;
            ve = strchr(v, '"');
            if (!ve) {
                set_msg(msg, msglen, "%s: unterminated quoted value", hname);
                return S3_ERR_INVALID_ARGUMENT;
            }
            p = ve + 1;
        } else {
            ve = v;
            while (*ve && *ve != ',' && *ve != ' ' && *ve != '\t')
                ve++;
            p = ve;
        }
        size_t vl = (size_t)(ve - v);
        if (tl == 2 && strncasecmp(eq - tl, "id", 2) == 0) {
            if (!canonical_ok(v, vl)) {
                set_msg(msg, msglen, "%s: id must be a canonical user id (64 hex digits)", hname);
                return S3_ERR_INVALID_ARGUMENT;
            }
            char id[65];
            memcpy(id, v, vl);
            id[vl] = '\0';
            if (acl_add(acl, AUTH_GRANTEE_USER, id, perm) != 0)
                goto full;
        } else if (tl == 3 && strncasecmp(eq - tl, "uri", 3) == 0) {
            int k = group_kind(v, vl);
            if (k < 0) {
                set_msg(msg, msglen,
                        "%s: unknown group uri (AllUsers, AuthenticatedUsers or "
                        "LogDelivery under http://acs.amazonaws.com/groups/)",
                        hname);
                return S3_ERR_INVALID_ARGUMENT;
            }
            if (acl_add(acl, (auth_grantee_kind_t)k, NULL, perm) != 0)
                goto full;
        } else if (tl == 12 && strncasecmp(eq - tl, "emailAddress", 12) == 0) {
            set_msg(msg, msglen,
                    "%s: the email address does not match any account on record (wharf's "
                    "accounts have no e-mail addresses); grant by id=\"canonical id\"",
                    hname);
            return S3_ERR_UNRESOLVABLE_EMAIL;
        } else {
            set_msg(msg, msglen, "%s: unknown grantee type (id, uri or emailAddress)", hname);
            return S3_ERR_INVALID_ARGUMENT;
        }
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p) {
            set_msg(msg, msglen, "%s: grantees must be separated by commas", hname);
            return S3_ERR_INVALID_ARGUMENT;
        }
    }
    return S3_OK;
full:
    set_msg(msg, msglen, "more than 100 grants%s", "");
    return S3_ERR_INVALID_ARGUMENT;
}

/* ---- AccessControlPolicy XML ------------------------------------------------------------ */

#define ACP "AccessControlPolicy/"
#define GRANT ACP "AccessControlList/Grant"

typedef struct acp_ctx {
    auth_acl_t *acl;
    s3_err_t err;
    char msg[200];
    bool have_owner, in_grant;
    char id[65];
    int kind; /* -1: none yet */
    bool email;
    unsigned perm;
} acp_ctx_t;

static void acp_fail(acp_ctx_t *c, s3_err_t e, const char *m)
{
    if (c->err == S3_OK) {
        c->err = e;
        snprintf(c->msg, sizeof c->msg, "%s", m);
    }
}

static void acp_cb(void *arg, const char *path, const char *text, size_t len)
{
    acp_ctx_t *c = arg;
    if (c->err != S3_OK)
        return;
    while (len && isspace((unsigned char)*text))
        text++, len--;
    while (len && isspace((unsigned char)text[len - 1]))
        len--;
    if (strcmp(path, ACP "Owner/ID") == 0) {
        if (!canonical_ok(text, len))
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "Owner/ID is not a canonical user id");
        memcpy(c->acl->owner, text, len);
        c->acl->owner[len] = '\0';
        c->have_owner = true;
    } else if (strcmp(path, GRANT "/Grantee/ID") == 0) {
        if (!canonical_ok(text, len))
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "Grantee/ID is not a canonical user id");
        if (c->kind >= 0)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "a Grantee names more than one grantee");
        memcpy(c->id, text, len);
        c->id[len] = '\0';
        c->kind = AUTH_GRANTEE_USER;
    } else if (strcmp(path, GRANT "/Grantee/URI") == 0) {
        int k = group_kind(text, len);
        if (k < 0)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "Grantee/URI is not a known group");
        if (c->kind >= 0)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "a Grantee names more than one grantee");
        c->kind = k;
    } else if (strcmp(path, GRANT "/Grantee/EmailAddress") == 0) {
        c->email = true;
    } else if (strcmp(path, GRANT "/Permission") == 0) {
        size_t i = 0;
        while (i < N_PERMS &&
               !(strlen(g_perms[i].name) == len && memcmp(g_perms[i].name, text, len) == 0))
            i++;
        if (i == N_PERMS)
            return acp_fail(c, S3_ERR_MALFORMED_ACL,
                            "Permission must be READ, WRITE, "
                            "READ_ACP, WRITE_ACP or FULL_CONTROL");
        c->perm = g_perms[i].perm;
    } else if (strcmp(path, GRANT) == 0) {
        if (c->email) /* S3's answer to an address no account has: wharf's accounts have none */
            return acp_fail(c, S3_ERR_UNRESOLVABLE_EMAIL,
                            "The email address you provided does not match any account on "
                            "record (wharf's accounts have no e-mail addresses); grant by "
                            "canonical user ID");
        if (c->kind < 0)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "a Grant has no Grantee ID or URI");
        if (!c->perm)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "a Grant has no Permission");
        if (acl_add(c->acl, (auth_grantee_kind_t)c->kind, c->kind == AUTH_GRANTEE_USER ? c->id : "",
                    c->perm) != 0)
            return acp_fail(c, S3_ERR_MALFORMED_ACL, "more than 100 grants");
        c->kind = -1;
        c->email = false;
        c->perm = 0;
        c->id[0] = '\0';
    }
}

s3_err_t auth_acl_parse_xml(const char *xml, size_t len, auth_acl_t *acl, char *msg, size_t msglen)
{
    acl_reset(acl, "");
    if (!xml || len == 0 || len > S3_XML_MAX_BYTES) {
        set_msg(msg, msglen, "the AccessControlPolicy body is %s",
                len ? "larger than 4 MiB" : "empty");
        return S3_ERR_MALFORMED_ACL;
    }
    acp_ctx_t c = {.acl = acl, .err = S3_OK, .kind = -1};
    if (s3_xml_walk(xml, len, acp_cb, &c) != 0) {
        set_msg(msg, msglen, "the AccessControlPolicy body is not well-formed XML%s", "");
        return S3_ERR_MALFORMED_XML;
    }
    if (c.err == S3_OK && !c.have_owner)
        acp_fail(&c, S3_ERR_MALFORMED_ACL, "AccessControlPolicy has no Owner/ID");
    if (c.err != S3_OK) {
        set_msg(msg, msglen, "%s", c.msg);
        acl_reset(acl, "");
        return c.err;
    }
    return S3_OK;
}

static void xml_grantee(wh_sbuf_t *b, const auth_grant_t *g, const auth_acl_t *acl,
                        const char *display_name)
{
    static const char *const xsi = "<Grantee xmlns:xsi=\"http://www.w3.org/2001/"
                                   "XMLSchema-instance\" xsi:type=\"";
    wh_sbuf_puts(b, xsi);
    if (g->kind == AUTH_GRANTEE_USER) {
        wh_sbuf_puts(b, "CanonicalUser\">");
        s3_xml_elem(b, "ID", g->id);
        if (strcmp(g->id, acl->owner) == 0)
            s3_xml_elem(b, "DisplayName", display_name && *display_name ? display_name : g->id);
    } else {
        wh_sbuf_puts(b, "Group\">");
        s3_xml_elem(b, "URI",
                    g->kind == AUTH_GRANTEE_ALL_USERS    ? AUTH_GROUP_ALL_USERS
                    : g->kind == AUTH_GRANTEE_AUTH_USERS ? AUTH_GROUP_AUTH_USERS
                                                         : AUTH_GROUP_LOG_DELIVERY);
    }
    wh_sbuf_puts(b, "</Grantee>");
}

void auth_acl_format_xml(const auth_acl_t *acl, const char *display_name, wh_sbuf_t *b)
{
    s3_xml_decl(b);
    wh_sbuf_puts(b, "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                    "<Owner>");
    s3_xml_elem(b, "ID", acl->owner);
    s3_xml_elem(b, "DisplayName", display_name && *display_name ? display_name : acl->owner);
    wh_sbuf_puts(b, "</Owner><AccessControlList>");
    for (size_t i = 0; i < acl->n; i++) {
        const auth_grant_t *g = &acl->g[i];
        for (size_t k = 0; k < N_PERMS; k++) {
            unsigned p = g_perms[k].perm;
            /* FULL_CONTROL alone when the grant holds every bit, else each bit it holds. */
            if (g->perm == AUTH_PERM_FULL_CONTROL ? p != AUTH_PERM_FULL_CONTROL
                                                  : (p == AUTH_PERM_FULL_CONTROL || !(g->perm & p)))
                continue;
            wh_sbuf_puts(b, "<Grant>");
            xml_grantee(b, g, acl, display_name);
            s3_xml_elem(b, "Permission", g_perms[k].name);
            wh_sbuf_puts(b, "</Grant>");
        }
    }
    wh_sbuf_puts(b, "</AccessControlList></AccessControlPolicy>");
}

/* ---- storage text ----------------------------------------------------------------------- */

static const char g_kind_ch[] = {'u', 'a', 't', 'l'};

void auth_acl_serialize(const auth_acl_t *acl, wh_sbuf_t *b)
{
    wh_sbuf_printf(b, "1;%s;", acl->owner);
    for (size_t i = 0; i < acl->n; i++) {
        const auth_grant_t *g = &acl->g[i];
        wh_sbuf_printf(b, "%s%c%x", i ? "," : "", g_kind_ch[g->kind], g->perm & 15u);
        if (g->kind == AUTH_GRANTEE_USER)
            wh_sbuf_printf(b, ":%s", g->id);
    }
}

s3_err_t auth_acl_deserialize(const char *text, const char *fallback_owner, auth_acl_t *acl,
                              char *msg, size_t msglen)
{
    if (!text || !*text) {
        auth_acl_private(acl, fallback_owner);
        return S3_OK;
    }
    acl_reset(acl, "");
    if (strncmp(text, "1;", 2) != 0)
        goto bad;
    const char *p = text + 2, *semi = strchr(p, ';');
    if (!semi || (semi != p && !canonical_ok(p, (size_t)(semi - p))))
        goto bad;
    memcpy(acl->owner, p, (size_t)(semi - p));
    acl->owner[semi - p] = '\0';
    p = semi + 1;
    while (*p) {
        const char *k = memchr(g_kind_ch, *p, sizeof g_kind_ch);
        if (!k || !isxdigit((unsigned char)p[1]))
            goto bad;
        auth_grantee_kind_t kind = (auth_grantee_kind_t)(k - g_kind_ch);
        unsigned perm =
            (unsigned)(isdigit((unsigned char)p[1]) ? p[1] - '0'
                                                    : tolower((unsigned char)p[1]) - 'a' + 10);
        p += 2;
        char id[65] = "";
        if (kind == AUTH_GRANTEE_USER) {
            if (*p != ':')
                goto bad;
            p++;
            size_t n = strcspn(p, ",");
            if (!canonical_ok(p, n))
                goto bad;
            memcpy(id, p, n);
            id[n] = '\0';
            p += n;
        }
        if (!perm || acl_add(acl, kind, id, perm) != 0)
            goto bad;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return S3_OK;
bad:
    set_msg(msg, msglen, "stored ACL text cannot be read: \"%.80s\"", text);
    acl_reset(acl, "");
    return S3_ERR_INTERNAL;
}

/* ---- checks ----------------------------------------------------------------------------- */

bool auth_acl_allows(const auth_acl_t *acl, const auth_principal_t *p, unsigned perm)
{
    if (!acl || !p)
        return false;
    bool authed = p->kind != AUTH_PRINCIPAL_ANON && p->canonical_id[0];
    unsigned have = 0;
    if (authed && strcmp(p->canonical_id, acl->owner) == 0)
        have |= AUTH_PERM_READ_ACP | AUTH_PERM_WRITE_ACP;
    for (size_t i = 0; i < acl->n && (have & perm) != perm; i++) {
        const auth_grant_t *g = &acl->g[i];
        switch (g->kind) {
        case AUTH_GRANTEE_USER:
            if (authed && strcmp(g->id, p->canonical_id) == 0)
                have |= g->perm;
            break;
        case AUTH_GRANTEE_ALL_USERS:
            have |= g->perm;
            break;
        case AUTH_GRANTEE_AUTH_USERS:
            if (p->kind != AUTH_PRINCIPAL_ANON)
                have |= g->perm;
            break;
        case AUTH_GRANTEE_LOG_DELIVERY:
            break;
        }
    }
    return (have & perm) == perm;
}

void auth_acl_drop_public(auth_acl_t *acl)
{
    size_t j = 0;
    for (size_t i = 0; i < acl->n; i++)
        if (acl->g[i].kind != AUTH_GRANTEE_ALL_USERS && acl->g[i].kind != AUTH_GRANTEE_AUTH_USERS)
            acl->g[j++] = acl->g[i];
    acl->n = j;
}

bool auth_acl_is_public(const auth_acl_t *acl)
{
    for (size_t i = 0; acl && i < acl->n; i++)
        if (acl->g[i].kind == AUTH_GRANTEE_ALL_USERS || acl->g[i].kind == AUTH_GRANTEE_AUTH_USERS)
            return true;
    return false;
}
