"""The S3 side of tests/upload_s3.rs, with boto3 against a local S3-compatible server.

    s3ctl.py ENDPOINT create-bucket BUCKET
    s3ctl.py ENDPOINT presign BUCKET KEY [--content-md5 B64] [--sigv2]   prints a PUT URL
    s3ctl.py ENDPOINT get BUCKET KEY OUT      writes the object to OUT, prints its ETag;
                                              exit 3 when there is no such object
    s3ctl.py ENDPOINT list BUCKET PREFIX      prints "KEY SIZE ETAG" per object under PREFIX

The credentials are moto's fake ones: nothing here reaches a real account.
"""

import argparse
import os
import sys

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.pop("AWS_PROFILE", None)

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


def client(endpoint, sigv2=False):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        config=Config(
            signature_version="s3" if sigv2 else "s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1},
        ),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("endpoint")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create-bucket")
    c.add_argument("bucket")
    s = sub.add_parser("presign")
    s.add_argument("bucket")
    s.add_argument("key")
    s.add_argument("--content-md5")
    s.add_argument("--sigv2", action="store_true")
    g = sub.add_parser("get")
    g.add_argument("bucket")
    g.add_argument("key")
    g.add_argument("out")
    ls = sub.add_parser("list")
    ls.add_argument("bucket")
    ls.add_argument("prefix")
    a = p.parse_args()

    if a.cmd == "create-bucket":
        client(a.endpoint).create_bucket(Bucket=a.bucket)
    elif a.cmd == "presign":
        params = {"Bucket": a.bucket, "Key": a.key}
        if a.content_md5:
            # Signs the URL for this Content-MD5 (and the Content-Type hprof-shrink sends):
            # a request with any other is refused.
            params["ContentMD5"] = a.content_md5
            params["ContentType"] = "application/zip"
        url = client(a.endpoint, a.sigv2).generate_presigned_url(
            "put_object", Params=params, ExpiresIn=600
        )
        print(url)
    elif a.cmd == "get":
        try:
            obj = client(a.endpoint).get_object(Bucket=a.bucket, Key=a.key)
        except ClientError as e:
            if e.response["Error"]["Code"] in ("NoSuchKey", "404"):
                sys.exit(3)
            raise
        with open(a.out, "wb") as f:
            f.write(obj["Body"].read())
        print(obj["ETag"])
    elif a.cmd == "list":
        pages = client(a.endpoint).get_paginator("list_objects_v2")
        for page in pages.paginate(Bucket=a.bucket, Prefix=a.prefix):
            for o in page.get("Contents", []):
                print(o["Key"], o["Size"], o["ETag"])


if __name__ == "__main__":
    main()
