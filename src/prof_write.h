/* prof_write.h - pstats (.prof) files, as scope-profiler's export_prof writes them */
#ifndef SX_PROF_WRITE_H
#define SX_PROF_WRITE_H

#include "buf.h"
#include "internal.h"

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
 * The pstats files (SX_FORMAT_PROF) and flame graphs (SX_FORMAT_FLAMEGRAPH) are
 * the pipeline's documents sx_doc_prof and sx_doc_flamegraph (pipeline.h): for
 * each selected rank with calls (rank 0 unless 'ranks' is given), the file
 * "<stem>_rank<N><suffix>" beside the output (suffix ".prof" or ".svg" when the
 * output has none), built and written by one process (the k-th by k % size),
 * renamed into place once every process has made its own.
 */

#endif /* SX_PROF_WRITE_H */
