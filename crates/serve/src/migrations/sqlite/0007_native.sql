-- Issue 32: registered native sizes.

-- The registered native bytes (Bitmap pixels on API 26+, through NativeAllocationRegistry)
-- the leaking object retains, apart from retained_bytes (Java). 0 in rows recorded before,
-- by an analyzer that did not count them.
ALTER TABLE leaks ADD COLUMN retained_native_bytes INTEGER NOT NULL DEFAULT 0;
