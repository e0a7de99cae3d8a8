// imported by import_error.js

throw new Error("thrown while importing");
