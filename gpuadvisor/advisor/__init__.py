"""advisor"""
