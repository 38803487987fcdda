/*
 * The few MPI calls the MPI transport makes, behind plain C types.
 *
 * MPI's handles and constants (MPI_COMM_WORLD, MPI_ANY_SOURCE, the layout
 * of MPI_Status, MPI_Request and MPI_Message) differ between MPI libraries
 * and are macros or link-time symbols; compiling this file with the
 * library's own mpi.h (build.rs asks `mpicc` for its flags) gets them right
 * for whichever MPI is installed, and the Rust side only sees ints, sizes
 * and opaque pointers. Every function returns an MPI error code (0 is
 * MPI_SUCCESS); only the transport's communication thread calls them.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int snet_mpi_initialized(void) {
    int flag = 0;
    MPI_Initialized(&flag);
    return flag;
}

/* MPI_THREAD_FUNNELED: the calling thread (the communication thread) is the
 * only one that ever calls MPI. Errors are returned, not fatal. */
int snet_mpi_init(int *rank, int *size, int *provided) {
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int snet_mpi_thread_funneled(void) { return MPI_THREAD_FUNNELED; }

int snet_mpi_finalize(void) { return MPI_Finalize(); }

/* The library's own description of an error code, into buf (NUL-terminated). */
void snet_mpi_error_string(int code, char *buf, size_t cap) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (cap == 0) return;
    if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) {
        len = 0;
    }
    if ((size_t)len >= cap) len = (int)cap - 1;
    memcpy(buf, s, (size_t)len);
    buf[len] = 0;
}

/* Requests live on the heap so that the Rust side can hold them as opaque
 * pointers; snet_mpi_test frees a completed one. */
static MPI_Request *new_request(void) {
    return (MPI_Request *)malloc(sizeof(MPI_Request));
}

/* A nonblocking send of len (< 2^31) bytes straight from buf. */
int snet_mpi_isend(const void *buf, size_t len, int dest, int tag, void **req) {
    MPI_Request *r = new_request();
    if (r == NULL) return MPI_ERR_NO_MEM;
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, MPI_COMM_WORLD, r);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    *req = r;
    return MPI_SUCCESS;
}

/* Tests a request; if it completed, frees it and sets *done. */
int snet_mpi_test(void *req, int *done) {
    MPI_Request *r = (MPI_Request *)req;
    int rc = MPI_Test(r, done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && *done) free(r);
    return rc;
}

/* Cancels and frees an unfinished request (at a failure). */
void snet_mpi_cancel(void *req) {
    MPI_Request *r = (MPI_Request *)req;
    MPI_Cancel(r);
    MPI_Request_free(r);
    free(r);
}

/* Matches the next message from anyone, if there is one: its source, tag,
 * size and a handle that receives exactly it (matched probe, so that no
 * other receive can take it). */
int snet_mpi_improbe(int *found, int *source, int *tag, size_t *len, void **msg) {
    MPI_Message m;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, found, &m, &st);
    if (rc != MPI_SUCCESS || !*found) return rc;
    int count = 0;
    rc = MPI_Get_count(&st, MPI_BYTE, &count);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Message *h = (MPI_Message *)malloc(sizeof(MPI_Message));
    if (h == NULL) return MPI_ERR_NO_MEM;
    *h = m;
    *source = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    *len = (size_t)count;
    *msg = h;
    return MPI_SUCCESS;
}

/* Receives a matched message into buf (blocking: the message is already here
 * or on its way; used for small ones). */
int snet_mpi_mrecv(void *buf, size_t len, void *msg) {
    MPI_Message *m = (MPI_Message *)msg;
    int rc = MPI_Mrecv(buf, (int)len, MPI_BYTE, m, MPI_STATUS_IGNORE);
    free(m);
    return rc;
}

/* Receives a matched message into buf without waiting (large ones: the
 * bytes land in buf, the field's own memory). */
int snet_mpi_imrecv(void *buf, size_t len, void *msg, void **req) {
    MPI_Message *m = (MPI_Message *)msg;
    MPI_Request *r = new_request();
    if (r == NULL) return MPI_ERR_NO_MEM;
    int rc = MPI_Imrecv(buf, (int)len, MPI_BYTE, m, r);
    free(m);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    *req = r;
    return MPI_SUCCESS;
}
