/*
 * mcp.h - refgate's MCP server (Model Context Protocol), independent of
 * what carries its messages. Two transports use it: `refgate-cli mcp`
 * (stdio, one message per line, commands sent to the gateway over HTTP)
 * and POST /v1/mcp in the gateway (Streamable HTTP, JSON replies, commands
 * run in process). Each MCP session drives one refgate session.
 *
 * The protocol: JSON-RPC 2.0; initialize (protocol version negotiated
 * among MCP_VERSIONS, capability tools), ping, tools/list, tools/call;
 * notifications get no reply. Tool names and argument shapes follow the
 * Playwright MCP server (its cookie tools included); browser_park is
 * refgate's own (docs/protocol.md, "MCP").
 *
 * Depends on common and cJSON only: the backend (mcp_session.call) is the
 * transport's.
 */
#ifndef RG_MCP_H
#define RG_MCP_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* JSON-RPC error codes. */
enum {
    MCP_PARSE = -32700,
    MCP_INVALID = -32600,
    MCP_NO_METHOD = -32601,
    MCP_BAD_PARAMS = -32602,
};

/* A message larger than this is refused (MCP_INVALID) by either transport. */
#define MCP_MESSAGE_MAX (8u * 1024 * 1024)

/**
 * The transport's way to run one command on the session sid ("" for none):
 * method "POST" with op and args (args consumed, may be NULL), or "DELETE"
 * (close) with op NULL. 0 with the reply map in *reply (the caller frees it;
 * ok true or false); a transport failure is a negative code with a
 * sentence in err.
 */
typedef int (*mcp_call_fn)(void *ud, const char *sid, const char *method, const char *op,
                           cJSON *args, cJSON **reply, char *err, size_t errlen);

/** One MCP session: the refgate session its tools drive. */
typedef struct mcp_session {
    mcp_call_fn call;
    void *ud;
    char sid[128]; /* "" until made; the first tool call makes it unless no_create */
    int made;      /* the session was made by this MCP session */
    int no_create; /* HTTP: the session is made at initialize; once closed, it stays so */
    int wait_max_ms; /* browser_wait_for's time is at most this; 0: 30 s */
    int no_eval;     /* the tenant may not eval: browser_evaluate is not offered */
    /**
     * browser_file_upload's paths: the upload entry {name, data} of the file
     * at path on this machine (stdio, where the agent's files are), or NULL
     * with a sentence in err. NULL over HTTP: paths name files on the
     * agent's machine, which the server cannot read; files carry the bytes.
     */
    cJSON *(*local_file)(void *ud, const char *path, char *err, size_t errlen);
    /**
     * browser_storage_state's, browser_set_storage_state's and
     * browser_pdf_save's filename, on this machine (stdio): write len bytes
     * to path, mode 0600 (0, or -1 with a sentence in err), and read the
     * JSON at path (NULL with a sentence in err). NULL over HTTP, where the
     * server cannot reach the agent's files.
     */
    int (*save_file)(void *ud, const char *path, const void *data, size_t len, char *err,
                     size_t errlen);
    cJSON *(*load_json)(void *ud, const char *path, char *err, size_t errlen);
} mcp_session;

/**
 * One message from the client (a JSON text, NUL-terminated). Returns the
 * reply message (the caller frees it), or NULL when none is due (a
 * notification, or a response).
 */
cJSON *mcp_handle(mcp_session *m, const char *text);
/** The same for a message already parsed (NULL: it was not JSON). */
cJSON *mcp_handle_msg(mcp_session *m, const cJSON *msg);

/** A JSON-RPC error message for id (NULL: null), for what a transport refuses itself. */
cJSON *mcp_error(const cJSON *id, int code, const char *message);

#endif
