"""Real-protocol stand-ins for what cannot exist on this machine: an ADB device
emulator, sshd fixtures, a TCP relay that can drop a link, and lab files that name them; and
small ONNX models shaped like real exported OCR models (``ocr_models``)."""
