"""presets"""
