"""Record batches (magic 2), legacy message sets (magic 0/1) and the conversions between them.

Modules: header (the 61-byte v2 batch header, read and patched in place), encoding (records
section encoders and batch assembly), builder (BatchBuilder, build_batch_bulk), batch (Record,
RecordBatch, encode / decode, control records; re-exports validate_batch), validation
(validate_batch: CRC and structure without building records), parsing (low-level reading
shared by decoding and validation), legacy (magic 0/1, up- and down-conversion, decode_any
for a mix of both formats), errors.
"""
