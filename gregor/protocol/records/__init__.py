"""Record batches (magic 2), legacy message sets (magic 0/1) and the conversions between them.

Modules: header (the 61-byte v2 batch header, read and patched in place), encoding (records
section encoders), builder (BatchBuilder, build_batch_bulk), batch (Record, RecordBatch,
decode / validate / control records), legacy (magic 0/1), errors.
"""
