/* prof_write.h - pstats (.prof) files, as scope-profiler's export_prof writes them */
#ifndef SX_PROF_WRITE_H
#define SX_PROF_WRITE_H

#include "internal.h"
#include "json_write.h"

#include <mpi.h>

/*
 * Marshal (version 4) pieces, as Python's marshal.loads reads them: enough
 * for the pstats dict. No back-references: the loaded value is the same.
 */
void sx_marshal_int(struct sx_buf *b, int64_t v);
void sx_marshal_float(struct sx_buf *b, double v);
void sx_marshal_str(struct sx_buf *b, const char *s, size_t n);
/* A tuple of 'n' items (n < 256): the items follow. */
void sx_marshal_tuple(struct sx_buf *b, size_t n);
/* A dict: key and value pairs follow, then sx_marshal_dict_end. */
void sx_marshal_dict(struct sx_buf *b);
void sx_marshal_dict_end(struct sx_buf *b);

/*
 * The whole export of pstats files (sx_export with SX_FORMAT_PROF): for each
 * selected rank with calls (rank 0 unless 'ranks' is given), the file
 * "<stem>_rank<N><suffix>" beside 'output' (suffix ".prof" when 'output' has
 * none). Each selected rank is built and written by one process (the k-th by
 * k % size); the files are renamed into place once every process has made
 * its own. NOTE: collective over 'comm' (MPI_COMM_NULL: this process alone).
 */
enum sx_status sx_prof_export(MPI_Comm comm, const char *input, const char *output,
                              const struct sx_options *o, struct sx_error *err);

#endif /* SX_PROF_WRITE_H */
